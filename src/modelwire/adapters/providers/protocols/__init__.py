"""The three wire protocols: request builders and streaming translators (spec §4)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol

from ....vocab import StreamChunk
from ....wire.sse import SseDecoder, SseEvent
from .anthropic_stream import AnthropicTranslator
from .common import ResponseRecord
from .completions_stream import CompletionsTranslator
from .responses_stream import ResponsesTranslator

__all__ = ["ResponseRecord", "Translator", "make_translator", "translate_sse"]


class Translator(Protocol):
    """A streaming translator: `feed` one SSE event at a time, then `end` once.

    `done` turns True once the protocol's end marker arrived (``[DONE]``, ``message_stop``, a
    terminal ``response.*`` event): the response is complete and nothing after it is read.
    """

    @property
    def done(self) -> bool:
        """The response is complete."""

    def feed(self, event: SseEvent, out: list[StreamChunk]) -> None:
        """Translate one event, appending chunks to `out`."""

    def end(self, out: list[StreamChunk]) -> None:
        """Finish the stream, appending the closing chunks (usage, finish) to `out`."""


def make_translator(api: str, record: ResponseRecord) -> Translator:
    """The translator for protocol `api` writing into `record`."""
    if api == "openai-completions":
        return CompletionsTranslator(record)
    if api == "openai-responses":
        return ResponsesTranslator(record)
    if api == "anthropic-messages":
        return AnthropicTranslator(record)
    raise ValueError(f"unknown protocol {api!r}")


def translate_sse(
    api: str,
    reads: Iterable[bytes],
    *,
    provider: str,
    model: str,
    context_window: int | None = None,
) -> list[StreamChunk]:
    """Translate a whole response body, given as reads of raw bytes, into chunks (no I/O)."""
    record = ResponseRecord(api=api, provider=provider, model=model, context_window=context_window)
    translator = make_translator(api, record)
    decoder = SseDecoder()
    out: list[StreamChunk] = []
    for data in reads:
        for event in decoder.feed(data):
            translator.feed(event, out)
    for event in decoder.close():
        translator.feed(event, out)
    translator.end(out)
    return out
