"""`openai-completions` streaming: Chat Completions SSE events → chunks (spec §4.3).

One text block and one reasoning block at most (created on first use); one tool-call block per
`tool_calls[].index`; every `block-end` is emitted after the stream finishes, in content order.
A ``custom`` tool call (OpenAI's free-form tools) carries its raw ``input`` text as arguments; a
tool call of a type this translator does not know is kept in the replay envelope and reported.
``[DONE]`` completes the response: without any ``finish_reason`` before it, the finish is
inferred (tool calls → tool-calls, else stop) and the envelope says so. The frame is the family's
(`chat_family.ChatStream`); this is its OpenAI dialect.
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

__all__ = ["CompletionsTranslator"]


class _Fn(msgspec.Struct, gc=False):
    name: str | None = None
    arguments: str | None = None


class _Custom(msgspec.Struct, gc=False):
    name: str | None = None
    input: str | None = None


class _ToolDelta(msgspec.Struct, gc=False):
    index: int | None = None
    id: str | None = None
    type: str | None = None
    function: _Fn | None = None
    custom: _Custom | None = None


class _RawDelta(msgspec.Struct, gc=False):
    tool_calls: list[msgspec.Raw] | None = None


class _RawChoice(msgspec.Struct, gc=False):
    index: int | None = None
    delta: _RawDelta | None = None


class _RawChunk(msgspec.Struct, gc=False):
    choices: list[_RawChoice] | None = None


class _Detail(msgspec.Struct, gc=False):
    type: str | None = None
    id: str | None = None


class _Delta(msgspec.Struct, gc=False):
    content: str | None = None
    refusal: str | None = None
    reasoning_content: str | None = None
    reasoning: str | None = None
    reasoning_text: str | None = None
    tool_calls: list[_ToolDelta] | None = None
    reasoning_details: list[msgspec.Raw] | None = None


class _PromptDetails(msgspec.Struct, gc=False):
    cached_tokens: TokenCount | None = None
    cache_write_tokens: TokenCount | None = None


class _OutputDetails(msgspec.Struct, gc=False):
    reasoning_tokens: TokenCount | None = None


class _Usage(msgspec.Struct, gc=False):
    prompt_tokens: TokenCount | None = None
    completion_tokens: TokenCount | None = None
    prompt_cache_hit_tokens: TokenCount | None = None
    prompt_tokens_details: _PromptDetails | None = None
    completion_tokens_details: _OutputDetails | None = None


class _Choice(msgspec.Struct, gc=False):
    index: int | None = None
    delta: _Delta | None = None
    finish_reason: str | None = None
    usage: _Usage | None = None


class _Chunk(msgspec.Struct, gc=False):
    id: str | None = None
    model: str | None = None
    choices: list[_Choice] | None = None
    usage: _Usage | None = None
    error: StreamError | None = None


_DECODE: Final = msgspec.json.Decoder(_Chunk).decode
_DETAIL: Final = msgspec.json.Decoder(_Detail).decode
_RAW: Final = msgspec.json.Decoder(_RawChunk).decode
_CALL_TYPES: Final = frozenset({None, "function", "custom"})
_FINISH: Final[dict[str, StopReason]] = {
    "stop": "stop",
    "end": "stop",
    "length": "length",
    "tool_calls": "toolUse",
    "function_call": "toolUse",
}


class CompletionsTranslator(ChatStream[_Chunk]):
    """Folds Chat Completions stream events into chunks; `end()` closes the blocks and finishes."""

    __slots__ = ("_reasoning", "_text", "_tools")

    _label = "Chat Completions"
    _end_text = "Stream ended without finish_reason"

    def __init__(self, record: ResponseRecord) -> None:
        super().__init__(record, _DECODE)
        self._text: BlockRecord | None = None
        self._reasoning: BlockRecord | None = None
        self._tools: dict[object, BlockRecord] = {}

    def _chunk(self, chunk: _Chunk, data: str, out: list[StreamChunk]) -> None:
        record = self._record
        if chunk.usage is not None:
            self._usage(chunk.usage)
        if chunk.error is not None:
            err = chunk.error
            code = f"{err.code}: " if err.code is not None else ""
            record.error_message = f"{code}{err.message or 'provider stream error'}"
            record.error_code = error_type_code(err.code, err.type)  # e.g. Groq's event: error
            record.stop_reason = "error"
        choices = chunk.choices
        if not choices:
            return
        choice = choices[0]
        if choice.index:  # not choice 0 first: use choice 0 wherever it is, if it is there
            found = choice_zero(choices)
            if found is None:
                return
            choice = found
        if choice.usage is not None:
            self._usage(choice.usage)
        delta = choice.delta
        if delta is not None and self._delta(delta, out):
            self._keep_unknown(data, choice.index or 0)
        reason = choice.finish_reason
        if reason and record.stop_reason != "error":
            stop = _FINISH.get(reason)
            if stop is None:
                record.stop_reason = "error"
                record.error_message = f"Provider finish_reason: {reason}"
                if reason == "content_filter":
                    record.error_code = ErrorCode.CONTENT_FILTER
            else:
                record.stop_reason = stop

    def _delta(self, delta: _Delta, out: list[StreamChunk]) -> bool:
        """Translate one delta; True when it holds a tool call of an unknown type."""
        record = self._record
        if delta.refusal:
            record.refuse(delta.refusal)  # not answer text: the finish is CONTENT_FILTER
        text = delta.content
        if text:
            block = self._text
            if block is None:
                block = self._text = record.open_block("text", out)
            block.text_delta(text, out)
        field = None
        if delta.reasoning_content:
            field, thinking = "reasoning_content", delta.reasoning_content
        elif delta.reasoning:
            field, thinking = "reasoning", delta.reasoning
        elif delta.reasoning_text:
            field, thinking = "reasoning_text", delta.reasoning_text
        if field is not None:
            block = self._reasoning
            if block is None:
                block = self._reasoning = record.open_block("reasoning", out)
                block.signature = field
            block.reasoning_delta(thinking, out)
        unknown = False
        if delta.tool_calls:
            for call in delta.tool_calls:
                if call.type in _CALL_TYPES:
                    self._tool(call, out)
                else:
                    unknown = True
        if delta.reasoning_details:
            for raw in delta.reasoning_details:
                try:
                    detail = _DETAIL(raw)
                except msgspec.DecodeError:
                    continue  # an entry of another shape carries no signature
                if detail.type == "reasoning.encrypted" and detail.id:
                    for block in self._tools.values():
                        if block.id == detail.id:
                            block.signature = bytes(raw).decode()
        return unknown

    def _keep_unknown(self, data: str, index: int) -> None:
        """Keep (and report) the tool calls of unknown types of choice `index`, raw."""
        record = self._record
        for choice in _RAW(data).choices or ():
            if (choice.index or 0) != index or choice.delta is None:
                continue
            for raw in choice.delta.tool_calls or ():
                call = msgspec.json.decode(raw, type=_ToolDelta)
                if call.type not in _CALL_TYPES:
                    record.note_unknown(f"tool_call:{call.type}")
                    record.keep(bytes(raw).decode())

    def _tool(self, call: _ToolDelta, out: list[StreamChunk]) -> None:
        key: object = call.index if call.index is not None else call.id
        block = self._tools.get(key)
        fn = call.function
        custom = call.custom
        if custom is not None:
            args, name = custom.input or "", custom.name
        else:
            args = (fn.arguments if fn is not None else None) or ""
            name = fn.name if fn is not None else None
        if block is None:
            block = self._record.open_tool_call(call.id or "", name or "", out, args)
            if custom is not None or call.type == "custom":
                block.call_type = "custom"
            self._tools[key] = block
            return
        if call.id and not block.id:
            block.id = self._record.call_id(call.id, block.index)
        if name and not block.name:
            block.name = name
        if args:
            block.arguments_delta(args, out)

    def _usage(self, usage: _Usage) -> None:
        details = usage.prompt_tokens_details
        cached = details.cached_tokens if details is not None else None
        if cached is None:
            cached = usage.prompt_cache_hit_tokens or 0
        out_details = usage.completion_tokens_details
        self._record.openai_usage(
            usage.prompt_tokens or 0,
            cached,
            (details.cache_write_tokens if details is not None else None) or 0,
            usage.completion_tokens or 0,
            out_details.reasoning_tokens if out_details is not None else None,
        )
