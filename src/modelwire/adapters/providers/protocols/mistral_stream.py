"""`mistral-conversations` streaming: Mistral chat completion chunks → chunks.

Mistral streams OpenAI-shaped chunks with its own content: ``delta.content`` is a string or a
list of typed chunks (``text``; ``thinking`` holding text chunks, Magistral's reasoning). As in
pi-ai, a switch between text and reasoning closes the open block and starts a new one. Tool
calls are keyed by ``index`` when present, else by ``id`` (Mistral's own calls carry no index
and arrive whole in one delta; a Mistral-hosted model may stream them OpenAI-style); a call
without an id gets one derived from its index. Usage rides on the finish chunk: cached prompt
tokens leave the input bucket, and no reasoning count is reported. A content chunk of another
type (references, images, types this translator does not know) is kept whole in the replay
envelope (an unknown type is reported, never an error); ``[DONE]`` without a finish reason
completes the response with an inferred finish. The frame is the family's
(`chat_family.ChatStream`); this is its Mistral dialect.
"""

from __future__ import annotations

from typing import Final

import msgspec

from ....errors import ErrorCode
from ....vocab import StreamChunk
from ....vocab.usage import TokenCount
from .chat_family import ChatStream, StreamError, choice_zero
from .common import (
    BlockRecord,
    ResponseRecord,
    StopReason,
    error_type_code,
)
from .mistral_body import mistral_tool_id

__all__ = ["MistralTranslator"]


class _TextPart(msgspec.Struct, gc=False):
    type: str | None = None
    text: str | None = None


class _Part(msgspec.Struct, gc=False):
    type: str | None = None
    text: str | None = None
    thinking: list[_TextPart] | None = None


class _Fn(msgspec.Struct, gc=False):
    name: str | None = None
    arguments: str | dict[str, object] | None = None


class _ToolDelta(msgspec.Struct, gc=False):
    index: int | None = None
    id: str | None = None
    type: str | None = None
    function: _Fn | None = None


class _Delta(msgspec.Struct, gc=False):
    content: str | list[_Part] | None = None
    tool_calls: list[_ToolDelta] | None = None


class _RawDelta(msgspec.Struct, gc=False):
    content: list[msgspec.Raw] | str | None = None


class _RawChoice(msgspec.Struct, gc=False):
    index: int | None = None
    delta: _RawDelta | None = None


class _RawChunk(msgspec.Struct, gc=False):
    choices: list[_RawChoice] | None = None


class _PromptDetails(msgspec.Struct, gc=False):
    cached_tokens: TokenCount | None = None


class _Usage(msgspec.Struct, gc=False):
    prompt_tokens: TokenCount | None = None
    completion_tokens: TokenCount | None = None
    prompt_tokens_details: _PromptDetails | None = None
    num_cached_tokens: TokenCount | None = None


class _Choice(msgspec.Struct, gc=False):
    index: int | None = None
    delta: _Delta | None = None
    finish_reason: str | None = None


class _Chunk(msgspec.Struct, gc=False):
    id: str | None = None
    object: str | None = None
    model: str | None = None
    choices: list[_Choice] | None = None
    usage: _Usage | None = None
    error: StreamError | None = None
    # Mistral's flat error envelope: {"object": "error", "message", "type", "code"}
    message: msgspec.Raw = msgspec.Raw(b"")
    type: str | None = None
    code: int | str | None = None


_DECODE: Final = msgspec.json.Decoder(_Chunk).decode
_RAW: Final = msgspec.json.Decoder(_RawChunk).decode
_ENCODE: Final = msgspec.json.encode
_KEPT_CHUNKS: Final = frozenset({"reference", "tool_reference"})
_FINISH: Final[dict[str, StopReason]] = {
    "stop": "stop",
    "length": "length",
    "model_length": "length",
    "tool_calls": "toolUse",
    "error": "error",
    "content_filter": "error",
}


def _message_text(raw: msgspec.Raw) -> str | None:
    """An error envelope's ``message``: a string as is, an object (a validation error) as JSON."""
    data = bytes(raw)
    if not data or data == b"null":
        return None
    try:
        value = msgspec.json.decode(data)
    except msgspec.DecodeError:
        return None
    return value if isinstance(value, str) else data.decode()


class MistralTranslator(ChatStream[_Chunk]):
    """Folds Mistral chat completion chunks into chunks; `end()` closes the blocks and finishes."""

    __slots__ = ("_current", "_last_tool", "_tools")

    _label = "Mistral chat"
    _end_text = "Mistral stream ended without finish_reason"

    def __init__(self, record: ResponseRecord) -> None:
        super().__init__(record, _DECODE)
        self._current: BlockRecord | None = None  # the open text or reasoning block
        self._tools: dict[object, BlockRecord] = {}
        self._last_tool: BlockRecord | None = None

    def _chunk(self, chunk: _Chunk, data: str, out: list[StreamChunk]) -> None:
        if chunk.usage is not None:
            self._usage(chunk.usage)
        if chunk.error is not None or chunk.object == "error":
            self._error(chunk)
            return
        choices = chunk.choices
        if not choices:
            return
        choice = choices[0]
        if choice.index:  # not choice 0 first: use choice 0 wherever it is, if it is there
            found = choice_zero(choices)
            if found is None:
                return
            choice = found
        record = self._record
        delta = choice.delta
        if delta is not None:
            if delta.content:
                self._content(delta.content, out, data, choice.index or 0)
            calls = [c for c in delta.tool_calls or () if c.type in (None, "function")]
            if calls:
                self._close_current(out)
                for call in calls:
                    self._tool(call, out)
            if delta.tool_calls and len(calls) < len(delta.tool_calls):
                for call in delta.tool_calls:
                    if call.type not in (None, "function"):
                        record.note_unknown(f"tool_call:{call.type}")  # skipped, reported
        reason = choice.finish_reason
        if reason and record.stop_reason != "error":
            stop = _FINISH.get(reason, "stop")  # pi-ai: an unknown reason is a stop
            record.stop_reason = stop
            if reason == "error":
                record.error_code = ErrorCode.SERVER
                record.error_message = (
                    f'model "{record.model}": Mistral ended the response with finish_reason "error"'
                )
            elif reason == "content_filter":
                record.error_code = ErrorCode.CONTENT_FILTER
                record.error_message = f'model "{record.model}" output stopped by content_filter'

    def _error(self, chunk: _Chunk) -> None:
        record = self._record
        err = chunk.error
        if err is not None:
            text, kind, code = err.message, err.type, err.code
        else:
            text, kind, code = _message_text(chunk.message), chunk.type, chunk.code
        label = " ".join(str(v) for v in (kind, code) if v is not None)
        record.stop_reason = "error"
        record.error_message = f"Mistral stream error{f' ({label})' if label else ''}: " + (
            text or "provider stream error"
        )
        record.error_code = error_type_code(kind, code)
        self.done = True  # an error envelope ends the response

    def _open(self, kind: str, out: list[StreamChunk]) -> BlockRecord:
        block = self._current
        if block is None or block.kind != kind:
            self._close_current(out)
            block = self._current = self._record.open_block(kind, out)
        return block

    def _close_current(self, out: list[StreamChunk]) -> None:
        block = self._current
        if block is not None:
            block.close(out)
            self._current = None

    def _content(
        self, content: str | list[_Part], out: list[StreamChunk], data: str, index: int
    ) -> None:
        if isinstance(content, str):
            self._open("text", out).text_delta(content, out)
            return
        for position, part in enumerate(content):
            if part.type == "thinking":
                pieces = [p.text for p in part.thinking or () if p.text]
                if pieces:
                    self._open("reasoning", out).reasoning_delta("".join(pieces), out)
            elif part.type == "text":
                if part.text:
                    self._open("text", out).text_delta(part.text, out)
            else:  # references, images, unknown types: no answer text, kept whole
                self._keep(data, index, position, part.type)

    def _keep(self, data: str, index: int, position: int, kind: str | None) -> None:
        record = self._record
        if kind not in _KEPT_CHUNKS:
            record.note_unknown(f"part:{kind or '(untyped)'}")
        for choice in _RAW(data).choices or ():
            content = choice.delta.content if choice.delta is not None else None
            if (choice.index or 0) == index and isinstance(content, list):
                if position < len(content):  # after the blocks opened so far (splits none)
                    record.keep(bytes(content[position]).decode())
                return

    def _tool(self, call: _ToolDelta, out: list[StreamChunk]) -> None:
        call_id = call.id if call.id and call.id != "null" else None
        key: object = (
            ("index", call.index)
            if call.index is not None
            else (("id", call_id) if call_id else None)
        )
        block = self._tools.get(key) if key is not None else self._last_tool
        fn = call.function
        name = fn.name if fn is not None else None
        raw = fn.arguments if fn is not None else None
        args = raw if isinstance(raw, str) else ("" if raw is None else _ENCODE(raw).decode())
        if block is None:
            new_id = call_id or mistral_tool_id(f"toolcall:{call.index or 0}")
            block = self._record.open_tool_call(new_id, name or "", out, args)
            self._tools[key if key is not None else ("id", new_id)] = block
            self._last_tool = block
            return
        if name and not block.name:
            block.name = name
        if args:
            block.arguments_delta(args, out)

    def _usage(self, usage: _Usage) -> None:
        prompt = usage.prompt_tokens or 0
        details = usage.prompt_tokens_details
        cached = (details.cached_tokens if details is not None else None) or (
            usage.num_cached_tokens or 0
        )
        cached = min(prompt, max(0, cached))
        self._record.openai_usage(prompt, cached, 0, usage.completion_tokens or 0, None)

    def _close_blocks(self, out: list[StreamChunk]) -> None:
        self._close_current(out)
        for block in self._record.blocks:
            if not block.closed:
                block.close(out)
