"""The three wire protocols: request builders and streaming translators (spec §4)."""

from __future__ import annotations

from collections.abc import Iterable

from ....vocab import StreamChunk
from ....wire.pump import Translator, translate_reads
from .anthropic_stream import AnthropicTranslator
from .common import ResponseRecord
from .completions_stream import CompletionsTranslator
from .responses_stream import ResponsesTranslator

__all__ = ["ResponseRecord", "Translator", "make_translator", "translate_sse"]


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
    out: list[StreamChunk] = []
    translate_reads(reads, make_translator(api, record), out)
    return out
