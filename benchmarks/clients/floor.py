"""The floor: bare aiohttp + `json.loads` loops, one per protocol.

Bytes from `resp.content.iter_any()`, split by hand on `\\n`, `data:` lines decoded with
`json.loads` into dicts, text/reasoning/tool arguments appended to lists and joined once. Nothing
else: no types, no validation, no events. This is the cheapest honest consumer of the stream and
the denominator of every "x floor" ratio.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import aiohttp

from .common import API_KEY, CHAT_TOOLS, MODEL, PROMPT, TOOL_SCHEMA, Client, Result, ToolAcc

_FINISH = {"stop": "stop", "tool_calls": "tool-calls", "end_turn": "stop", "tool_use": "tool-calls"}


async def _data_lines(chunks: AsyncIterator[bytes]) -> AsyncIterator[bytes]:
    buf = b""
    async for data in chunks:
        if buf:
            data = buf + data
        lines = data.split(b"\n")
        buf = lines.pop()
        for line in lines:
            if line.startswith(b"data:"):
                yield line[5:]


class _Floor(Client):
    kind = "floor"
    checks_usage = True
    path = ""

    def version(self) -> str:
        return f"aiohttp {aiohttp.__version__}"

    async def setup(self, base_url: str) -> None:
        self.session = aiohttp.ClientSession(
            base_url=base_url.rstrip("/") + "/",
            connector=aiohttp.TCPConnector(limit=0),
            timeout=aiohttp.ClientTimeout(total=600),
            headers={"authorization": f"Bearer {API_KEY}"},
        )

    def body(self, tools: bool) -> dict[str, Any]:
        raise NotImplementedError

    async def stream(self, tools: bool) -> Result:
        async with self.session.post(self.path, json=self.body(tools)) as resp:
            resp.raise_for_status()
            return await self.consume(_data_lines(resp.content.iter_any()))

    async def consume(self, lines: AsyncIterator[bytes]) -> Result:
        raise NotImplementedError

    async def close(self) -> None:
        await self.session.close()


class ChatFloor(_Floor):
    """DeepSeek/OpenAI chat chunks."""

    name = "floor: aiohttp + json.loads (chat)"
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

    async def consume(self, lines: AsyncIterator[bytes]) -> Result:
        text: list[str] = []
        reasoning: list[str] = []
        acc = ToolAcc()
        usage: dict[str, Any] | None = None
        finish: str | None = None
        async for data in lines:
            if data.startswith(b" [DONE]"):
                u: dict[str, Any] = usage or {}
                return Result(
                    "".join(text),
                    "".join(reasoning),
                    acc.done(),
                    {
                        "input_tokens": u.get("prompt_cache_miss_tokens"),
                        "output_tokens": u.get("completion_tokens"),
                        "cache_read_tokens": u.get("prompt_cache_hit_tokens"),
                        "reasoning_tokens": (u.get("completion_tokens_details") or {}).get(
                            "reasoning_tokens"
                        ),
                    },
                    _FINISH.get(finish or ""),
                )
            obj = json.loads(data)
            u = obj.get("usage")
            if u:
                usage = u
            for ch in obj["choices"]:
                d = ch["delta"]
                c = d.get("content")
                if c:
                    text.append(c)
                r = d.get("reasoning_content")
                if r:
                    reasoning.append(r)
                tcs = d.get("tool_calls")
                if tcs:
                    for tc in tcs:
                        f = tc.get("function") or {}
                        acc.add(tc.get("index", 0), tc.get("id"), f.get("name"), f.get("arguments"))
                if ch.get("finish_reason"):
                    finish = ch["finish_reason"]
        raise AssertionError("chat stream ended without data: [DONE]")


class ResponsesFloor(_Floor):
    """OpenAI Responses events."""

    name = "floor: aiohttp + json.loads (responses)"
    proto = "responses"
    path = "v1/responses"

    def body(self, tools: bool) -> dict[str, Any]:
        b: dict[str, Any] = {"model": MODEL, "input": PROMPT, "stream": True, "store": False}
        if tools:
            b["tools"] = [{"type": "function", "name": "get_weather", "parameters": TOOL_SCHEMA}]
        return b

    async def consume(self, lines: AsyncIterator[bytes]) -> Result:
        text: list[str] = []
        reasoning: list[str] = []
        calls: dict[int, list[Any]] = {}
        async for data in lines:
            obj = json.loads(data)
            t = obj["type"]
            if t == "response.output_text.delta":
                text.append(obj["delta"])
            elif t == "response.reasoning_text.delta":
                reasoning.append(obj["delta"])
            elif t == "response.function_call_arguments.delta":
                calls[obj["output_index"]][2].append(obj["delta"])
            elif t == "response.output_item.added":
                item = obj["item"]
                if item["type"] == "function_call":
                    calls[obj["output_index"]] = [item["call_id"], item["name"], []]
            elif t == "response.completed":
                r = obj["response"]
                u = r["usage"]
                cached = u["input_tokens_details"]["cached_tokens"]
                tcs = [
                    {"id": c[0], "name": c[1], "arguments": "".join(c[2])}
                    for _, c in sorted(calls.items())
                ]
                return Result(
                    "".join(text),
                    "".join(reasoning),
                    tcs,
                    {
                        "input_tokens": u["input_tokens"] - cached,
                        "output_tokens": u["output_tokens"],
                        "cache_read_tokens": cached,
                        "reasoning_tokens": u["output_tokens_details"]["reasoning_tokens"],
                    },
                    "tool-calls" if tcs and r["status"] == "completed" else "stop",
                )
        raise AssertionError("responses stream ended without response.completed")


class AnthropicFloor(_Floor):
    """Anthropic Messages events."""

    name = "floor: aiohttp + json.loads (anthropic)"
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

    async def consume(self, lines: AsyncIterator[bytes]) -> Result:
        text: list[str] = []
        reasoning: list[str] = []
        calls: dict[int, list[Any]] = {}
        usage: dict[str, Any] = {}
        stop = None
        async for data in lines:
            obj = json.loads(data)
            t = obj["type"]
            if t == "content_block_delta":
                d = obj["delta"]
                dt = d["type"]
                if dt == "text_delta":
                    text.append(d["text"])
                elif dt == "thinking_delta":
                    reasoning.append(d["thinking"])
                elif dt == "input_json_delta":
                    calls[obj["index"]][2].append(d["partial_json"])
            elif t == "content_block_start":
                b = obj["content_block"]
                if b["type"] == "tool_use":
                    calls[obj["index"]] = [b["id"], b["name"], []]
            elif t == "message_start":
                usage.update(obj["message"]["usage"])
            elif t == "message_delta":
                stop = obj["delta"].get("stop_reason")
                usage.update({k: v for k, v in obj["usage"].items() if v is not None})
            elif t == "message_stop":
                tcs = [
                    {"id": c[0], "name": c[1], "arguments": "".join(c[2])}
                    for _, c in sorted(calls.items())
                ]
                details = usage.get("output_tokens_details") or {}
                return Result(
                    "".join(text),
                    "".join(reasoning),
                    tcs,
                    {
                        "input_tokens": usage.get("input_tokens"),
                        "output_tokens": usage.get("output_tokens"),
                        "cache_read_tokens": usage.get("cache_read_input_tokens"),
                        "reasoning_tokens": details.get("thinking_tokens"),
                    },
                    _FINISH.get(stop or ""),
                )
        raise AssertionError("anthropic stream ended without message_stop")
