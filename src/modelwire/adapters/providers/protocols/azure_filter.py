"""Azure OpenAI content filtering → the refusal outcome (``CONTENT_FILTER``), naming categories.

Azure annotates chat chunks with ``prompt_filter_results`` and ``choices[].content_filter_results``
(one entry per category: ``{"filtered": bool, "severity"?}``), ends a filtered answer with
``finish_reason: content_filter``, and refuses a filtered prompt with HTTP 400 ``code:
content_filter`` (``innererror.content_filter_result``). The existing translators already turn a
``content_filter`` finish (chat) or ``incomplete: content_filter`` (Responses) into
CONTENT_FILTER; these wrappers add the categories to the message, treat a ``filtered: true``
annotation as a refusal even when the finish looked clean, and refine the HTTP 400.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

import msgspec

from ....errors import ErrorCode, LlmError
from ....vocab import StreamChunk
from ....wire.sse import SseEvent
from ....wire.status import reclassify
from .common import ResponseRecord
from .completions_stream import CompletionsTranslator
from .responses_stream import ResponsesTranslator

__all__ = [
    "AzureCompletionsTranslator",
    "AzureResponsesTranslator",
    "filtered_categories",
    "refine_azure_http_error",
]


class _Category(msgspec.Struct, gc=False):
    filtered: bool = False
    severity: str | None = None


class _Annotated(msgspec.Struct, gc=False):
    content_filter_results: dict[str, msgspec.Raw] | None = None


class _FilterChunk(msgspec.Struct, gc=False):
    prompt_filter_results: list[_Annotated] | None = None
    choices: list[_Annotated] | None = None


class _Inner(msgspec.Struct, gc=False):
    code: str | None = None
    content_filter_result: dict[str, msgspec.Raw] | None = None


class _Blocked(msgspec.Struct, gc=False):
    source_type: str | None = None
    content_filter_results: dict[str, msgspec.Raw] | None = None


class _Err(msgspec.Struct, gc=False):
    code: str | None = None
    innererror: _Inner | None = None
    content_filters: list[_Blocked] | None = None


class _Envelope(msgspec.Struct, gc=False):
    error: _Err | None = None


_CATEGORY: Final = msgspec.json.Decoder(_Category).decode
_FILTER_CHUNK: Final = msgspec.json.Decoder(_FilterChunk).decode
_ENVELOPE: Final = msgspec.json.Decoder(_Envelope).decode
_FLAGGED: Final = ('"filtered":true', '"filtered": true')


def filtered_categories(results: Mapping[str, msgspec.Raw] | None) -> list[str]:
    """The categories of one ``content_filter_results`` object that filtered, as
    ``name (severity)`` (entries of another shape are skipped)."""
    out: list[str] = []
    for name, raw in (results or {}).items():
        try:
            category = _CATEGORY(raw)
        except msgspec.DecodeError:
            continue
        if category.filtered:
            out.append(f"{name} ({category.severity})" if category.severity else name)
    return out


def _stopped_message(record: ResponseRecord, categories: list[str]) -> str:
    named = f": {', '.join(dict.fromkeys(categories))}" if categories else ""
    return f'model "{record.model}": the Azure OpenAI content filter stopped the response{named}'


class AzureCompletionsTranslator(CompletionsTranslator):
    """The Chat Completions family's Azure dialect: `CompletionsTranslator` plus Azure's
    content-filter annotations."""

    __slots__ = ("_categories",)

    def __init__(self, record: ResponseRecord) -> None:
        super().__init__(record)
        self._categories: list[str] = []

    def feed(self, event: SseEvent, out: list[StreamChunk]) -> None:
        """Translate one SSE event (annotations are decoded only when one says filtered)."""
        data = event.data
        if data and any(flag in data for flag in _FLAGGED):
            self._scan(data)
        super().feed(event, out)

    def _scan(self, data: str) -> None:
        try:
            chunk = _FILTER_CHUNK(data)
        except msgspec.DecodeError:
            return  # the inner translator reports the malformed event
        for prompt in chunk.prompt_filter_results or ():
            self._categories.extend(
                f"prompt {c}" for c in filtered_categories(prompt.content_filter_results)
            )
        for choice in chunk.choices or ():
            self._categories.extend(filtered_categories(choice.content_filter_results))

    def end(self, out: list[StreamChunk]) -> None:
        """Close the response; a filtered answer finishes as CONTENT_FILTER naming categories."""
        record = self._record
        filtered = record.error_code == ErrorCode.CONTENT_FILTER
        if self._categories and (record.stop_reason != "error" or filtered):
            filtered = True
            record.stop_reason = "error"
            record.error_code = ErrorCode.CONTENT_FILTER
        if filtered:
            record.error_message = _stopped_message(record, self._categories)
        super().end(out)


class AzureResponsesTranslator:
    """`ResponsesTranslator` plus Azure's ``content_filter`` failures."""

    __slots__ = ("_inner", "_record")

    def __init__(self, record: ResponseRecord) -> None:
        self._record = record
        self._inner = ResponsesTranslator(record)

    @property
    def done(self) -> bool:
        """A terminal response event arrived."""
        return self._inner.done

    def feed(self, event: SseEvent, out: list[StreamChunk]) -> None:
        """Translate one SSE event."""
        self._inner.feed(event, out)

    def end(self, out: list[StreamChunk]) -> None:
        """Close the response; a failure whose code is ``content_filter`` is CONTENT_FILTER."""
        record = self._record
        text = record.error_message or ""
        if record.stop_reason == "error" and record.error_code is None and "content_filter" in text:
            record.error_code = ErrorCode.CONTENT_FILTER
            record.error_message = f"{_stopped_message(record, [])} ({text})"
        self._inner.end(out)


def refine_azure_http_error(
    error: LlmError, body_text: str, headers: Mapping[str, str], secrets: tuple[str, ...] = ()
) -> LlmError:
    """`error` (the shared mapping of a non-2xx Azure answer) as CONTENT_FILTER when the body
    says the content filter refused the request, naming the filtered categories; else `error`."""
    if error.code == ErrorCode.CONTENT_FILTER:
        return error  # refined already
    if "content_filter" not in body_text and "ResponsibleAIPolicyViolation" not in body_text:
        return error
    try:
        envelope = _ENVELOPE(body_text)
    except msgspec.DecodeError:
        return error
    err = envelope.error
    if err is None:
        return error
    inner = err.innererror
    if err.code != "content_filter" and (
        inner is None or inner.code != "ResponsibleAIPolicyViolation"
    ):
        return error
    categories = filtered_categories(inner.content_filter_result if inner else None)
    for blocked in err.content_filters or ():
        categories.extend(filtered_categories(blocked.content_filter_results))
    named = ", ".join(dict.fromkeys(categories)) or "category not reported"
    return reclassify(
        error, ErrorCode.CONTENT_FILTER, f"{error.message} (Azure OpenAI content filter: {named})"
    )
