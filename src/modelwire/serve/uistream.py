"""One agent turn's log events as the Vercel AI SDK's UI message stream (SSE, protocol `v1`).

`UiEncoder` folds the events of one turn, from its `turn/start` to its `turn/end`, into the
stream's parts: `start`, `start-step` / `finish-step` per step, `text-*` and `reasoning-*` per
content block of the step's chunks, `tool-input-start/-delta/-available` per tool call,
`tool-approval-request` for a call logged `needs_approval`, `tool-output-available` /
`tool-output-error` / `tool-output-denied` per result, `error` for a turn that failed, and
`finish` then `[DONE]`. Every SSE event carries `id:` = the seq of the log event it came from, so
a client resuming after `Last-Event-ID: N` gets exactly the parts of the events after seq N.

The encoding is a pure function of the turn's events (ids are derived from turn, step, attempt and
block index), so every process and every resume encodes the same parts for the same seqs. Tools
are sent as `dynamic` (the client does not declare the server's tools).
"""

from __future__ import annotations

from typing import Final

import msgspec

from ..events import (
    AssistantChunk,
    Event,
    StepEnd,
    StepStart,
    ToolCallRecord,
    ToolResultRecord,
    TurnEnd,
    TurnStart,
)
from ..vocab import (
    BlockEnd,
    BlockStart,
    ReasoningDelta,
    TextBlock,
    TextDelta,
    ToolCallDelta,
)

__all__ = ["DONE", "HEADERS", "UiEncoder", "frame", "message_id", "result_text"]

HEADERS: Final = {
    "Content-Type": "text/event-stream",
    "Cache-Control": "no-cache",
    "Connection": "keep-alive",
    "x-vercel-ai-ui-message-stream": "v1",
    "x-accel-buffering": "no",
}
DONE: Final = b"data: [DONE]\n\n"

_encode = msgspec.json.Encoder().encode
_decode = msgspec.json.decode

Part = dict[str, object]


def frame(seq: int, part: Part) -> bytes:
    """One SSE event: `id: seq` and the part as JSON `data:`."""
    return b"id: %d\ndata: %s\n\n" % (seq, _encode(part))


def message_id(session_id: str, turn: int) -> str:
    """The UI message id of a turn's assistant message (the same after a pause and its resume)."""
    return f"{session_id}:t{turn}"


def result_text(record: ToolResultRecord) -> str:
    """The text of a logged tool result (its blocks' texts joined)."""
    texts: list[str] = []
    for block in record.message.content:
        content = getattr(block, "content", ())
        texts.extend(b.text for b in content if isinstance(b, TextBlock))
    return "".join(texts)


class _Block:
    __slots__ = ("call_id", "id", "kind", "name", "prefix", "started")

    def __init__(self, kind: str, part_id: str) -> None:
        self.kind = kind
        self.id = part_id
        self.call_id: str | None = None
        self.name: str | None = None
        self.started = False
        self.prefix = b""


class UiEncoder:
    """Folds one turn's events into UI message stream parts (module docstring)."""

    def __init__(self, session_id: str) -> None:
        self.session_id = session_id
        self.started = False
        self.finished = False
        self.turn = 0
        self._blocks: dict[tuple[int, int, int], _Block] = {}
        self._step_open = False

    def encode(self, event: Event) -> bytes:
        """The SSE frames of `event` (empty when it shows nothing), `[DONE]` after the end.
        A text or reasoning delta (the hot path) is written from its block's prebuilt prefix,
        without a part dict."""
        fact = event.data
        if isinstance(fact, AssistantChunk) and isinstance(fact.chunk, TextDelta | ReasoningDelta):
            found = self._blocks.get((fact.step, fact.attempt, fact.chunk.index))
            if found is not None and found.prefix and fact.chunk.text and not self.finished:
                text = _encode(fact.chunk.text)
                return b"id: %d\ndata: %s%s}\n\n" % (event.seq, found.prefix, text)
        parts = self.parts(event)
        if not parts:
            return b""
        data = b"".join(frame(event.seq, part) for part in parts)
        return data + DONE if self.finished else data

    def fail(self, seq: int, message: str) -> bytes:
        """An `error` and the end of the stream (the log could not be read on)."""
        self.finished = True
        end = frame(seq, {"type": "error", "errorText": message})
        return end + frame(seq, {"type": "finish", "finishReason": "error"}) + DONE

    def parts(self, event: Event) -> list[Part]:
        """The parts event `event` adds (none for facts the UI does not show)."""
        data = event.data
        if isinstance(data, TurnStart):
            self.turn = data.turn
            if self.started:
                return []
            self.started = True
            return [{"type": "start", "messageId": message_id(self.session_id, data.turn)}]
        if not self.started or self.finished:
            return []
        if isinstance(data, StepStart):
            self._step_open = True
            return [{"type": "start-step"}]
        if isinstance(data, AssistantChunk):
            return self._chunk(data)
        if isinstance(data, ToolCallRecord):
            if data.needs_approval:
                return [
                    {
                        "type": "tool-approval-request",
                        "approvalId": data.call_id,
                        "toolCallId": data.call_id,
                    }
                ]
            return []
        if isinstance(data, ToolResultRecord):
            return [self._result(data)]
        if isinstance(data, StepEnd):
            self._blocks.clear()
            self._step_open = False
            return [{"type": "finish-step"}]
        if isinstance(data, TurnEnd):
            return self._end(data)
        return []

    def _end(self, data: TurnEnd) -> list[Part]:
        self.finished = True
        out: list[Part] = []
        if self._step_open:
            out.append({"type": "finish-step"})
        reason = data.reason
        failure = getattr(reason, "failure", None)
        if failure is not None:
            out.append({"type": "error", "errorText": f"{failure.code}: {failure.message}"})
        elif reason.kind in ("aborted", "interrupted", "blocked", "limit"):
            out.append({"type": "error", "errorText": f"the turn ended: {reason.kind}"})
        finish: Part = {"type": "finish"}
        match reason.kind:
            case "completed" | "paused":
                finish["finishReason"] = "stop" if reason.kind == "completed" else "tool-calls"
            case "max-tokens":
                finish["finishReason"] = "length"
            case _:
                finish["finishReason"] = "error" if failure is not None else "other"
        out.append(finish)
        return out

    def _result(self, data: ToolResultRecord) -> Part:
        if data.error_code == "TOOL_DENIED":
            return {"type": "tool-output-denied", "toolCallId": data.call_id}
        if data.is_error:
            return {
                "type": "tool-output-error",
                "toolCallId": data.call_id,
                "errorText": result_text(data),
                "dynamic": True,
            }
        return {
            "type": "tool-output-available",
            "toolCallId": data.call_id,
            "output": result_text(data),
            "dynamic": True,
        }

    def _chunk(self, data: AssistantChunk) -> list[Part]:
        chunk = data.chunk
        if isinstance(chunk, BlockStart):
            key = (data.step, data.attempt, chunk.index)
            part_id = f"t{data.turn}s{data.step}a{data.attempt}b{chunk.index}"
            block = _Block(chunk.block_type, part_id)
            self._blocks[key] = block
            if chunk.block_type in ("text", "reasoning"):
                block.started = True
                block.prefix = b'{"type":"%s-delta","id":"%s","delta":' % (
                    chunk.block_type.encode(),
                    part_id.encode(),
                )
                return [{"type": f"{chunk.block_type}-start", "id": part_id}]
            return []
        if isinstance(chunk, TextDelta | ReasoningDelta | ToolCallDelta | BlockEnd):
            found = self._blocks.get((data.step, data.attempt, chunk.index))
            if found is None:
                return []
            return self._in_block(found, chunk)
        return []

    def _in_block(
        self, block: _Block, chunk: TextDelta | ReasoningDelta | ToolCallDelta | BlockEnd
    ) -> list[Part]:
        if isinstance(chunk, TextDelta | ReasoningDelta):
            if block.kind not in ("text", "reasoning") or not chunk.text:
                return []
            return [{"type": f"{block.kind}-delta", "id": block.id, "delta": chunk.text}]
        if isinstance(chunk, ToolCallDelta):
            out: list[Part] = []
            if chunk.id is not None and block.call_id is None:
                block.call_id = chunk.id
            if chunk.name is not None and block.name is None:
                block.name = chunk.name
            if not block.started and block.call_id is not None and block.name is not None:
                block.started = True
                out.append(
                    {
                        "type": "tool-input-start",
                        "toolCallId": block.call_id,
                        "toolName": block.name,
                        "dynamic": True,
                    }
                )
            if block.started and chunk.arguments_delta:
                out.append(
                    {
                        "type": "tool-input-delta",
                        "toolCallId": block.call_id,
                        "inputTextDelta": chunk.arguments_delta,
                    }
                )
            return out
        return self._block_end(block, chunk)

    def _block_end(self, block: _Block, chunk: BlockEnd) -> list[Part]:
        if block.kind in ("text", "reasoning"):
            return [{"type": f"{block.kind}-end", "id": block.id}]
        ended = chunk.block
        call_id = getattr(ended, "id", None)
        name = getattr(ended, "name", None)
        arguments = getattr(ended, "arguments", None)
        if not isinstance(call_id, str) or not isinstance(name, str):
            return []
        out: list[Part] = []
        if not block.started:
            block.started = True
            out.append(
                {
                    "type": "tool-input-start",
                    "toolCallId": call_id,
                    "toolName": name,
                    "dynamic": True,
                }
            )
        try:
            parsed: object = _decode(arguments) if isinstance(arguments, str) and arguments else {}
        except msgspec.DecodeError:
            parsed = arguments
        out.append(
            {
                "type": "tool-input-available",
                "toolCallId": call_id,
                "toolName": name,
                "input": parsed,
                "dynamic": True,
            }
        )
        return out
