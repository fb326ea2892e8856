"""`google-generative-ai` streaming: Gemini ``streamGenerateContent?alt=sse`` events → chunks.

Every event is one ``GenerateContentResponse`` (no ``event:`` names, no ``[DONE]``); the response
is complete after the event whose candidate 0 carries ``finishReason``. Only candidate 0 is read.
Consecutive text parts of one kind share a block (``thought: true`` parts are reasoning, the
others text); a ``functionCall`` part closes it and is a tool-call block of its own, whose
arguments are the compact JSON of the ``args`` object Gemini sends whole (absent or null: ``{}``;
any other non-object is `MALFORMED_RESPONSE`, never a silent ``{}``; Vertex's streamed
``partialArgs`` are assembled by `google_args` until the empty ``functionCall: {}`` that closes
the call). A call without an id (Gemini 2.x sends none) gets one minted from the response id and
its position, stable and unique within the response; an id Gemini sent is kept. Each block keeps
the ``thoughtSignature`` of its parts byte-exact (the last non-empty one of a text or thought
block; the one of its part for a call); empty text parts only carry a signature to the block of
their kind they follow. Server-side parts (``executableCode``, ``codeExecutionResult``, Gemini 3's
``toolCall`` / ``toolResponse``) and parts
of kinds this translator does not know (``inlineData``, ...) are no content blocks: each closes
the open block and is kept byte-exact in the replay envelope at its place (sent back to the same
model); an unknown kind is reported, never an error. ``groundingMetadata`` is not content (the
server tools' prompts are in ``toolUsePromptTokenCount``, which no bucket counts).

Usage is the last ``usageMetadata``: input = prompt - cached, cache read = cached, output =
candidates + thoughts (``candidatesTokenCount`` excludes thinking), reasoning = thoughts. A
negative count does not decode (`TokenCount`): the event is `MALFORMED_RESPONSE`.
"""

from __future__ import annotations

from typing import Final

import msgspec

from ....errors import ErrorCode
from ....vocab import StreamChunk
from ....vocab.usage import TokenCount
from ....wire.sse import SseEvent
from .common import BlockRecord, ResponseRecord, end_stream, malformed_event
from .google_args import PartialArguments
from .google_errors import google_status_code
from .google_finish import finish_candidate

__all__ = ["GoogleTranslator"]


class _PartialArg(msgspec.Struct, gc=False):
    jsonPath: str = ""
    stringValue: str | None = None
    numberValue: int | float | None = None
    boolValue: bool | None = None
    nullValue: str | None = None


class _FunctionCall(msgspec.Struct, gc=False):
    name: str | None = None
    id: str | None = None
    args: msgspec.Raw = msgspec.Raw(b"")  # the whole arguments object, as sent
    partialArgs: list[_PartialArg] | None = None
    willContinue: bool | None = None


class _Part(msgspec.Struct, gc=False):
    text: str | None = None
    thought: bool | None = None
    thoughtSignature: str | None = None
    functionCall: _FunctionCall | None = None


class _Content(msgspec.Struct, gc=False):
    parts: list[_Part] | None = None


class _RawContent(msgspec.Struct, gc=False):
    parts: list[msgspec.Raw] | None = None


class _RawCandidate(msgspec.Struct, gc=False):
    index: int | None = None
    content: _RawContent | None = None


class _RawEvent(msgspec.Struct, gc=False):
    candidates: list[_RawCandidate] | None = None


class _Rating(msgspec.Struct, gc=False):
    category: str | None = None
    blocked: bool | None = None


class _Candidate(msgspec.Struct, gc=False):
    index: int | None = None
    content: _Content | None = None
    finishReason: str | None = None
    finishMessage: str | None = None
    safetyRatings: list[_Rating] | None = None


class _Usage(msgspec.Struct, gc=False):
    promptTokenCount: TokenCount | None = None
    cachedContentTokenCount: TokenCount | None = None
    candidatesTokenCount: TokenCount | None = None
    thoughtsTokenCount: TokenCount | None = None
    toolUsePromptTokenCount: TokenCount | None = None


class _Feedback(msgspec.Struct, gc=False):
    blockReason: str | None = None
    blockReasonMessage: str | None = None


class _Error(msgspec.Struct, gc=False):
    code: int | None = None
    message: str | None = None
    status: str | None = None


class _Event(msgspec.Struct, gc=False):
    candidates: list[_Candidate] | None = None
    usageMetadata: _Usage | None = None
    promptFeedback: _Feedback | None = None
    modelVersion: str | None = None
    responseId: str | None = None
    error: _Error | None = None


_DECODE: Final = msgspec.json.Decoder(_Event).decode
_RAW: Final = msgspec.json.Decoder(_RawEvent).decode
_KEYS: Final = msgspec.json.Decoder(dict[str, msgspec.Raw]).decode
_FORMAT: Final = msgspec.json.format
_SERVER_PARTS: Final = frozenset(
    {"executableCode", "codeExecutionResult", "toolCall", "toolResponse"}
)
_NOT_KINDS: Final = frozenset({"thought", "thoughtSignature"})


def _compact(raw: msgspec.Raw) -> str | None:
    """The compact JSON of a whole ``args`` object (`{}` when absent or null; None when it is
    not an object: an array, a string, a number is no arguments object, never read as `{}`)."""
    data = bytes(raw).strip()
    if not data or data == b"null":
        return "{}"
    if not data.startswith(b"{"):
        return None
    return _FORMAT(data, indent=-1).decode()


class GoogleTranslator:
    """Folds Gemini stream events into chunks; `end()` closes the blocks and finishes."""

    __slots__ = ("_args", "_calls", "_current", "_record", "_streaming", "done")

    def __init__(self, record: ResponseRecord) -> None:
        self._record = record
        self.done = False  # candidate 0 finished (or the stream failed): stop reading
        self._current: BlockRecord | None = None  # the open text or reasoning block
        self._streaming: BlockRecord | None = None  # the open Vertex streamed call
        self._args: PartialArguments | None = None  # its arguments so far
        self._calls = 0

    def feed(self, event: SseEvent, out: list[StreamChunk]) -> None:
        """Translate one SSE event, appending its chunks to `out`."""
        data = event.data
        if not data or data == "[DONE]" or self.done:
            return
        try:
            ev = _DECODE(data)
        except msgspec.DecodeError as exc:
            raise malformed_event(self._record, "Gemini", exc) from exc
        record = self._record
        if ev.responseId and record.response_id is None:
            record.response_id = ev.responseId
        if ev.modelVersion and record.response_model is None and ev.modelVersion != record.model:
            record.response_model = ev.modelVersion
        if ev.error is not None:
            err = ev.error
            status = f"{err.status}: " if err.status else ""
            self._fail(
                f"{status}{err.message or 'Gemini stream error'}",
                google_status_code(err.status),
            )
            return
        if ev.usageMetadata is not None:
            self._usage(ev.usageMetadata)
        candidate = self._candidate(ev.candidates)
        if candidate is not None:
            content = candidate.content
            if content is not None and content.parts:
                for position, part in enumerate(content.parts):
                    if not self._part(part, out):
                        self._keep(data, candidate.index or 0, position)
            if candidate.finishReason:
                blocked = [
                    r.category for r in candidate.safetyRatings or () if r.blocked and r.category
                ]
                finish_candidate(record, candidate.finishReason, candidate.finishMessage, blocked)
                self.done = True
                return
        feedback = ev.promptFeedback
        if feedback is not None and feedback.blockReason:
            why = f": {feedback.blockReasonMessage}" if feedback.blockReasonMessage else ""
            self._fail(
                f'model "{record.model}": the prompt was blocked '
                f"(promptFeedback.blockReason {feedback.blockReason}){why}",
                ErrorCode.CONTENT_FILTER,
            )

    @staticmethod
    def _candidate(candidates: list[_Candidate] | None) -> _Candidate | None:
        if not candidates:
            return None
        first = candidates[0]
        if not first.index:
            return first
        return next((c for c in candidates if not c.index), None)

    def _fail(self, message: str, code: str | None) -> None:
        record = self._record
        record.stop_reason = "error"
        record.error_message = message
        record.error_code = code
        self.done = True

    def _part(self, part: _Part, out: list[StreamChunk]) -> bool:
        """Translate one part; False for a part no block carries (to be kept whole)."""
        call = part.functionCall
        if call is not None:
            self._call(call, part.thoughtSignature, out)
        elif part.text is not None:
            self._text(part.text, part.thought is True, part.thoughtSignature, out)
        else:
            return False
        return True

    def _keep(self, data: str, index: int, position: int) -> None:
        """Keep part `position` of candidate `index` byte-exact, after the blocks opened so far
        (it splits no block); report its kind when it is no server-side tool part."""
        event = _RAW(data)
        candidate = next((c for c in event.candidates or () if (c.index or 0) == index), None)
        parts = candidate.content.parts if candidate and candidate.content else None
        if not parts or position >= len(parts):
            return
        raw = bytes(parts[position])
        kinds = [k for k in _KEYS(raw) if k not in _NOT_KINDS]
        if kinds and kinds[0] in _SERVER_PARTS:
            self._record.server_tool_loop = True  # server-side tools ran: not content
        else:
            self._record.note_unknown(f"part:{kinds[0] if kinds else '(empty)'}")
        self._record.keep(raw.decode())

    def _text(
        self, text: str, thought: bool, signature: str | None, out: list[StreamChunk]
    ) -> None:
        kind = "reasoning" if thought else "text"
        block = self._current
        if block is None or block.kind != kind:
            if not text:
                return  # an empty part opens nothing (its signature has no block to ride on)
            self._close_open(out)
            block = self._current = self._record.open_block(kind, out)
        if text:
            if thought:
                block.reasoning_delta(text, out)
            else:
                block.text_delta(text, out)
        if signature:
            block.signature = signature  # the last non-empty one of the block

    def _call_id(self, sent: str | None) -> str:
        """Gemini's id when it sent one not seen yet in this response, else a minted one."""
        record = self._record
        self._calls += 1
        if sent and not any(b.kind == "tool-call" and b.id == sent for b in record.blocks):
            return sent
        rid = record.response_id
        return f"call_{rid}_{self._calls}" if rid else f"call_{self._calls}"

    def _call(self, call: _FunctionCall, signature: str | None, out: list[StreamChunk]) -> None:
        streaming = self._streaming
        if streaming is not None and (call.partialArgs or not call.name):
            self._partial(call.partialArgs)
            if signature:
                streaming.signature = signature
            if not call.willContinue:
                self._close_streaming(out)
            return
        self._close_open(out)
        call_id = self._call_id(call.id)
        name = call.name or ""
        if call.willContinue or call.partialArgs:
            block = self._streaming = self._record.open_tool_call(call_id, name, out)
            block.signature = signature or None
            self._args = PartialArguments()
            self._partial(call.partialArgs)
            if not call.willContinue:
                self._close_streaming(out)
            return
        arguments = _compact(call.args)
        if arguments is None:
            kind = bytes(call.args).lstrip()[:1].decode("latin-1")
            raise malformed_event(
                self._record,
                "Gemini",
                ValueError(f"functionCall {name!r}: args is not an object (starts {kind!r})"),
            )
        block = self._record.open_tool_call(call_id, name, out, arguments)
        block.signature = signature or None
        block.close(out)

    def _partial(self, fragments: list[_PartialArg] | None) -> None:
        args = self._args
        if args is None or not fragments:
            return
        for fragment in fragments:
            if fragment.stringValue is not None:
                ok = args.apply(fragment.jsonPath, fragment.stringValue, True)
            elif fragment.numberValue is not None:
                ok = args.apply(fragment.jsonPath, fragment.numberValue, False)
            elif fragment.boolValue is not None:
                ok = args.apply(fragment.jsonPath, fragment.boolValue, False)
            elif fragment.nullValue is not None:
                ok = args.apply(fragment.jsonPath, None, False)
            else:
                continue  # a fragment without a value (the path's value is still to come)
            if not ok:
                raise malformed_event(
                    self._record,
                    "Gemini",
                    ValueError(f"partialArgs jsonPath {fragment.jsonPath!r} cannot be applied"),
                )

    def _close_streaming(self, out: list[StreamChunk]) -> None:
        block = self._streaming
        if block is None:
            return
        args = self._args
        arguments = args.json() if args is not None else "{}"
        block.arguments_delta(arguments, out)
        block.close(out)
        self._streaming = None
        self._args = None

    def _close_open(self, out: list[StreamChunk]) -> None:
        """Close the open text/reasoning block and the open streamed call, if any."""
        if self._current is not None:
            self._current.close(out)
            self._current = None
        self._close_streaming(out)

    def _usage(self, usage: _Usage) -> None:
        record = self._record
        record.reported = True
        cached = usage.cachedContentTokenCount or 0
        thoughts = usage.thoughtsTokenCount
        record.input = max(0, (usage.promptTokenCount or 0) - cached)
        record.cache_read = cached
        record.cache_write = 0
        record.output = (usage.candidatesTokenCount or 0) + (thoughts or 0)
        record.reasoning = thoughts
        if usage.toolUsePromptTokenCount:
            record.server_tool_loop = True  # server tools ran: the prompt counts several calls

    def end(self, out: list[StreamChunk]) -> None:
        """The stream ended: close the open blocks (a complete response), then usage and finish
        (the truncated-stream failure when no ``finishReason`` came)."""
        record = self._record
        if record.stop_reason is not None and record.stop_reason != "error":
            self._close_open(out)
            for block in record.blocks:
                if not block.closed:
                    block.close(out)
        end_stream(
            record,
            record.stop_reason is not None,
            "Gemini stream ended without a finishReason",
            out,
        )
