"""The three wire protocols: request builders and streaming translators (spec §4)."""

from __future__ import annotations

from collections.abc import Iterable

from ....vocab import StreamChunk, StructuredOutputSupport
from ....wire.pump import Translator, translate_reads
from ..materialize import ModelDescriptor
from .anthropic_stream import AnthropicTranslator
from .common import ResponseRecord
from .completions_stream import CompletionsTranslator
from .openai_completions import completions_compat
from .responses_stream import ResponsesTranslator

__all__ = [
    "ResponseRecord",
    "Translator",
    "make_translator",
    "structured_output_support",
    "translate_sse",
]


def structured_output_support(model: ModelDescriptor) -> StructuredOutputSupport:
    """How a model's protocol honours `GenerateOptions.output`: Responses sends a strict JSON
    Schema format; Chat Completions a `json_schema` response format, strict where the endpoint
    has strict mode; Anthropic forces an answer tool, which the provider does not validate."""
    if model.api == "openai-responses":
        return "native-strict"
    if model.api == "openai-completions":
        return "native-strict" if completions_compat(model).supports_strict_mode else "native-json"
    return "emulated"


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
