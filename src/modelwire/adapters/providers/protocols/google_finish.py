"""The stop reason of a Gemini response from candidate 0's ``finishReason``: STOP is a stop (or
tool calls when the response holds function calls), MAX_TOKENS a length stop, the filter family
a CONTENT_FILTER refusal, a rejected function call MALFORMED_RESPONSE, anything else with nothing
produced EMPTY_RESPONSE (server-tool output counts as produced), else a failure naming it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from ....errors import ErrorCode
from .common import ResponseRecord

__all__ = ["finish_candidate"]

_FILTERED: Final = frozenset(
    {
        "SAFETY",
        "RECITATION",
        "PROHIBITED_CONTENT",
        "BLOCKLIST",
        "SPII",
        "IMAGE_SAFETY",
        "IMAGE_PROHIBITED_CONTENT",
        "IMAGE_RECITATION",
        "MODEL_ARMOR",
    }
)
"""Output withheld by a filter: one refusal outcome (CONTENT_FILTER)."""
_BAD_CALLS: Final = frozenset(
    {"MALFORMED_FUNCTION_CALL", "UNEXPECTED_TOOL_CALL", "TOO_MANY_TOOL_CALLS"}
)
"""The model emitted a function call Gemini could not parse or accept."""


def finish_candidate(
    record: ResponseRecord, reason: str | None, message: str | None, blocked: Sequence[str]
) -> None:
    """Set `record`'s stop reason (and failure) from a ``finishReason`` with its
    ``finishMessage`` and the categories of the safety ratings that blocked it."""
    reason = reason or ""
    said = f": {message}" if message else ""
    if reason == "STOP":
        calls = any(b.kind == "tool-call" for b in record.blocks)
        record.stop_reason = "toolUse" if calls else "stop"  # tool turns end with STOP
        return
    if reason == "MAX_TOKENS":
        record.stop_reason = "length"
        return
    record.stop_reason = "error"
    if reason in _FILTERED:
        which = f" [{', '.join(blocked)}]" if blocked else ""
        record.error_code = ErrorCode.CONTENT_FILTER
        record.error_message = (
            f'model "{record.model}": Gemini withheld the response '
            f"(finishReason {reason}){which}{said}"
        )
    elif reason in _BAD_CALLS:
        record.error_code = ErrorCode.MALFORMED_RESPONSE
        record.error_message = (
            f'model "{record.model}" produced a function call Gemini rejected '
            f"(finishReason {reason}){said}"
        )
    elif not any(b.parts for b in record.blocks) and not record.opaque:
        # OTHER (and FINISH_REASON_UNSPECIFIED, ...) with nothing produced: an empty answer
        record.error_code = ErrorCode.EMPTY_RESPONSE
        record.error_message = (
            f'model "{record.model}" returned no content (finishReason {reason}){said}'
        )
    else:
        record.error_code = ErrorCode.PI_AI_ERROR
        record.error_message = (
            f'model "{record.model}" stopped before its answer was complete '
            f"(finishReason {reason}){said}"
        )
