"""The hard floor: raw asyncio streams, hand-parsed chunked HTTP/1.1, msgspec typed decode.

No HTTP library at all: `asyncio.open_connection`, one hand-written request, the status line and
headers parsed by hand, the chunked transfer coding undone by hand (`size\\r\\n payload \\r\\n`,
any split across reads), SSE events cut on the blank line, and each `data:` payload decoded by a
`msgspec.json.Decoder` into a struct holding *only* the fields a correct client needs (msgspec
skips the rest without building it). Text, reasoning and tool arguments are appended to lists and
joined once. This is the cheapest correct consumer of the stream in Python: the denominator of the
"x hard floor" ratios, beside the aiohttp + `json.loads` floor (`floor.py`).

Limits, stated: LF-delimited SSE (what OpenAI, DeepSeek and Anthropic send), HTTP/1.1 chunked
responses (what the local server sends), keep-alive connections reused per client.
"""

from __future__ import annotations

import asyncio
from typing import Any
from urllib.parse import urlsplit

import msgspec

from .common import API_KEY, CHAT_TOOLS, MODEL, PROMPT, TOOL_SCHEMA, Client, Result, ToolAcc

_FINISH = {"stop": "stop", "tool_calls": "tool-calls", "end_turn": "stop", "tool_use": "tool-calls"}
_READ = 1 << 16


class _Conn:
    """One keep-alive HTTP/1.1 connection: send a POST, then hand out the SSE data payloads."""

    __slots__ = ("buf", "done", "reader", "tail", "writer")

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer
        self.buf = b""  # undecoded bytes of the chunked body
        self.tail = b""  # an SSE event split across HTTP chunks
        self.done = False

    async def post(self, head: bytes, body: bytes) -> None:
        """Send the request and read the response head (200 and chunked, else raise)."""
        self.writer.write(head + b"content-length: %d\r\n\r\n" % len(body) + body)
        data = b""
        while (end := data.find(b"\r\n\r\n")) < 0:
            more = await self.reader.read(_READ)
            if not more:
                raise ConnectionError("connection closed before the response head")
            data += more
        lines = data[:end].split(b"\r\n")
        status = lines[0].split(b" ", 2)
        if len(status) < 2 or status[1] != b"200":
            raise AssertionError(f"hard floor: server answered {lines[0]!r}")
        chunked = any(
            ln.lower().startswith(b"transfer-encoding:") and b"chunked" in ln.lower()
            for ln in lines[1:]
        )
        if not chunked:
            raise AssertionError("hard floor: expected a chunked response")
        self.buf, self.tail, self.done = data[end + 4 :], b"", False

    async def batch(self) -> list[bytes]:
        """The next `data:` payloads (at least one, reading as needed); [] once the body ended."""
        while not self.done:
            out = self._parse() if self.buf else []
            if out or self.done:
                return out
            more = await self.reader.read(_READ)
            if not more:
                raise ConnectionError("connection closed inside the chunked body")
            self.buf = self.buf + more if self.buf else more
        return []

    def _parse(self) -> list[bytes]:
        buf, pos, n = self.buf, 0, len(self.buf)
        out: list[bytes] = []
        tail = self.tail
        while True:
            j = buf.find(b"\r\n", pos)
            if j < 0:
                break
            line = buf[pos:j]
            size = int(line.split(b";", 1)[0] if b";" in line else line, 16)
            start = j + 2
            end = start + size
            if end + 2 > n:
                break
            pos = end + 2
            if size == 0:  # last chunk (no trailers from this server): the body is complete
                self.done = True
                break
            payload = buf[start:end]
            if tail:
                payload, tail = tail + payload, b""
            events = payload.split(b"\n\n")
            tail = events.pop()
            for ev in events:
                if ev.startswith(b"data: ") and b"\n" not in ev:
                    out.append(ev[6:])  # the common shape: one data line
                else:
                    data = [
                        ln[6:] if ln.startswith(b"data: ") else ln[5:]
                        for ln in ev.split(b"\n")
                        if ln.startswith(b"data:")
                    ]
                    if data:
                        out.append(b"\n".join(data))
        self.buf, self.tail = buf[pos:], tail
        return out


class _HardFloor(Client):
    kind = "floor"
    checks_usage = True
    path = ""

    def version(self) -> str:
        return f"asyncio streams + msgspec {msgspec.__version__}"

    async def setup(self, base_url: str) -> None:
        parts = urlsplit(base_url)
        self.host, self.port = parts.hostname or "127.0.0.1", parts.port or 80
        prefix = parts.path.rstrip("/")
        self.head = (
            f"POST {prefix}/{self.path} HTTP/1.1\r\nhost: {self.host}:{self.port}\r\n"
            f"authorization: Bearer {API_KEY}\r\ncontent-type: application/json\r\n"
            "accept: text/event-stream\r\n"
        ).encode()
        self.idle: list[_Conn] = []
        self.bodies = {t: msgspec.json.encode(self.body(t)) for t in (False, True)}

    def body(self, tools: bool) -> dict[str, Any]:
        raise NotImplementedError

    async def stream(self, tools: bool) -> Result:
        conn = self.idle.pop() if self.idle else _Conn(*await self._open())
        await conn.post(self.head, self.bodies[tools])
        res = await self.consume(conn)
        while not conn.done:  # the terminal chunk may follow in a later read
            await conn.batch()
        if not conn.buf:
            self.idle.append(conn)  # the body ended cleanly: reuse the connection
        else:
            conn.writer.close()
        return res

    async def _open(self) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        return await asyncio.open_connection(self.host, self.port, limit=1 << 22)

    async def consume(self, conn: _Conn) -> Result:
        raise NotImplementedError

    async def close(self) -> None:
        for conn in self.idle:
            conn.writer.close()
        self.idle = []


# ---- chat (DeepSeek / OpenAI Chat Completions): only the fields a client needs ----------------


class _Fn(msgspec.Struct):
    name: str | None = None
    arguments: str | None = None


class _Call(msgspec.Struct):
    index: int = 0
    id: str | None = None
    function: _Fn | None = None


class _Delta(msgspec.Struct):
    content: str | None = None
    reasoning_content: str | None = None
    tool_calls: list[_Call] | None = None


class _Choice(msgspec.Struct):
    delta: _Delta
    finish_reason: str | None = None


class _Details(msgspec.Struct):
    reasoning_tokens: int | None = None


class _ChatUsage(msgspec.Struct):
    completion_tokens: int | None = None
    prompt_cache_hit_tokens: int | None = None
    prompt_cache_miss_tokens: int | None = None
    completion_tokens_details: _Details | None = None


class _ChatChunk(msgspec.Struct):
    choices: list[_Choice] = []
    usage: _ChatUsage | None = None


class ChatHardFloor(_HardFloor):
    """DeepSeek/OpenAI chat chunks."""

    name = "hard floor: asyncio + chunked by hand + msgspec (chat)"
    proto = "chat"
    path = "v1/chat/completions"

    def body(self, tools: bool) -> dict[str, Any]:
        b: dict[str, Any] = {
            "model": MODEL,
            "messages": [{"role": "user", "content": PROMPT}],
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        if tools:
            b["tools"] = CHAT_TOOLS
        return b

    async def consume(self, conn: _Conn) -> Result:
        decode = msgspec.json.Decoder(_ChatChunk).decode
        text: list[str] = []
        reasoning: list[str] = []
        acc = ToolAcc()
        usage: _ChatUsage | None = None
        finish: str | None = None
        while batch := await conn.batch():
            for data in batch:
                if data == b"[DONE]":
                    u = usage or _ChatUsage()
                    d = u.completion_tokens_details
                    return Result(
                        "".join(text),
                        "".join(reasoning),
                        acc.done(),
                        {
                            "input_tokens": u.prompt_cache_miss_tokens,
                            "output_tokens": u.completion_tokens,
                            "cache_read_tokens": u.prompt_cache_hit_tokens,
                            "reasoning_tokens": d.reasoning_tokens if d else None,
                        },
                        _FINISH.get(finish or ""),
                    )
                chunk = decode(data)
                if chunk.usage is not None:
                    usage = chunk.usage
                for ch in chunk.choices:
                    d = ch.delta
                    if d.content:
                        text.append(d.content)
                    if d.reasoning_content:
                        reasoning.append(d.reasoning_content)
                    if d.tool_calls:
                        for tc in d.tool_calls:
                            f = tc.function
                            acc.add(tc.index, tc.id, f and f.name, f and f.arguments)
                    if ch.finish_reason:
                        finish = ch.finish_reason
            if conn.done:
                break
        raise AssertionError("chat stream ended without data: [DONE]")


# ---- OpenAI Responses ---------------------------------------------------------------------------


class _Item(msgspec.Struct):
    type: str
    call_id: str | None = None
    name: str | None = None


class _InDetails(msgspec.Struct):
    cached_tokens: int = 0


class _OutDetails(msgspec.Struct):
    reasoning_tokens: int | None = None


class _RespUsage(msgspec.Struct):
    input_tokens: int
    output_tokens: int
    input_tokens_details: _InDetails
    output_tokens_details: _OutDetails


class _Response(msgspec.Struct):
    status: str
    usage: _RespUsage | None = None


class _RespEvent(msgspec.Struct):
    type: str
    delta: str | None = None
    output_index: int = 0
    item: _Item | None = None
    response: _Response | None = None


class ResponsesHardFloor(_HardFloor):
    """OpenAI Responses events."""

    name = "hard floor: asyncio + chunked by hand + msgspec (responses)"
    proto = "responses"
    path = "v1/responses"

    def body(self, tools: bool) -> dict[str, Any]:
        b: dict[str, Any] = {"model": MODEL, "input": PROMPT, "stream": True, "store": False}
        if tools:
            b["tools"] = [{"type": "function", "name": "get_weather", "parameters": TOOL_SCHEMA}]
        return b

    async def consume(self, conn: _Conn) -> Result:
        decode = msgspec.json.Decoder(_RespEvent).decode
        text: list[str] = []
        reasoning: list[str] = []
        calls: dict[int, list[Any]] = {}
        while batch := await conn.batch():
            for data in batch:
                ev = decode(data)
                t = ev.type
                if t == "response.output_text.delta":
                    text.append(ev.delta or "")
                elif t == "response.reasoning_text.delta":
                    reasoning.append(ev.delta or "")
                elif t == "response.function_call_arguments.delta":
                    calls[ev.output_index][2].append(ev.delta or "")
                elif t == "response.output_item.added":
                    item = ev.item
                    if item is not None and item.type == "function_call":
                        calls[ev.output_index] = [item.call_id, item.name, []]
                elif t == "response.completed":
                    r = ev.response
                    assert r is not None and r.usage is not None
                    u = r.usage
                    cached = u.input_tokens_details.cached_tokens
                    tcs = [
                        {"id": c[0], "name": c[1], "arguments": "".join(c[2])}
                        for _, c in sorted(calls.items())
                    ]
                    return Result(
                        "".join(text),
                        "".join(reasoning),
                        tcs,
                        {
                            "input_tokens": u.input_tokens - cached,
                            "output_tokens": u.output_tokens,
                            "cache_read_tokens": cached,
                            "reasoning_tokens": u.output_tokens_details.reasoning_tokens,
                        },
                        "tool-calls" if tcs and r.status == "completed" else "stop",
                    )
            if conn.done:
                break
        raise AssertionError("responses stream ended without response.completed")


# ---- Anthropic Messages -------------------------------------------------------------------------


class _AnthDelta(msgspec.Struct):
    type: str | None = None
    text: str | None = None
    thinking: str | None = None
    partial_json: str | None = None
    stop_reason: str | None = None


class _Block(msgspec.Struct):
    type: str
    id: str | None = None
    name: str | None = None


class _ThinkDetails(msgspec.Struct):
    thinking_tokens: int | None = None


class _AnthUsage(msgspec.Struct):
    input_tokens: int | None = None
    output_tokens: int | None = None
    cache_read_input_tokens: int | None = None
    output_tokens_details: _ThinkDetails | None = None


class _Message(msgspec.Struct):
    usage: _AnthUsage


class _AnthEvent(msgspec.Struct):
    type: str
    index: int = 0
    delta: _AnthDelta | None = None
    content_block: _Block | None = None
    message: _Message | None = None
    usage: _AnthUsage | None = None


class AnthropicHardFloor(_HardFloor):
    """Anthropic Messages events."""

    name = "hard floor: asyncio + chunked by hand + msgspec (anthropic)"
    proto = "anthropic"
    path = "v1/messages"

    def body(self, tools: bool) -> dict[str, Any]:
        b: dict[str, Any] = {
            "model": MODEL,
            "max_tokens": 4096,
            "messages": [{"role": "user", "content": PROMPT}],
            "stream": True,
        }
        if tools:
            b["tools"] = [{"name": "get_weather", "input_schema": TOOL_SCHEMA}]
        return b

    async def consume(self, conn: _Conn) -> Result:
        decode = msgspec.json.Decoder(_AnthEvent).decode
        text: list[str] = []
        reasoning: list[str] = []
        calls: dict[int, list[Any]] = {}
        usage: dict[str, Any] = {}
        stop = None
        while batch := await conn.batch():
            for data in batch:
                ev = decode(data)
                t = ev.type
                if t == "content_block_delta":
                    d = ev.delta
                    assert d is not None
                    dt = d.type
                    if dt == "text_delta":
                        text.append(d.text or "")
                    elif dt == "thinking_delta":
                        reasoning.append(d.thinking or "")
                    elif dt == "input_json_delta":
                        calls[ev.index][2].append(d.partial_json or "")
                elif t == "content_block_start":
                    b = ev.content_block
                    if b is not None and b.type == "tool_use":
                        calls[ev.index] = [b.id, b.name, []]
                elif t == "message_start" and ev.message is not None:
                    _merge(usage, ev.message.usage)
                elif t == "message_delta":
                    stop = ev.delta.stop_reason if ev.delta else None
                    if ev.usage is not None:
                        _merge(usage, ev.usage)
                elif t == "message_stop":
                    tcs = [
                        {"id": c[0], "name": c[1], "arguments": "".join(c[2])}
                        for _, c in sorted(calls.items())
                    ]
                    return Result(
                        "".join(text), "".join(reasoning), tcs, usage, _FINISH.get(stop or "")
                    )
            if conn.done:
                break
        raise AssertionError("anthropic stream ended without message_stop")


def _merge(usage: dict[str, Any], u: _AnthUsage) -> None:
    if u.input_tokens is not None:
        usage["input_tokens"] = u.input_tokens
    if u.output_tokens is not None:
        usage["output_tokens"] = u.output_tokens
    if u.cache_read_input_tokens is not None:
        usage["cache_read_tokens"] = u.cache_read_input_tokens
    if u.output_tokens_details is not None:
        usage["reasoning_tokens"] = u.output_tokens_details.thinking_tokens
