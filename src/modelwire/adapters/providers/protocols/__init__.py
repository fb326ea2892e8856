"""The wire protocols: request builders and streaming translators (spec §4), one
`WireProtocol` each in `registry`."""

from __future__ import annotations

from collections.abc import Iterable

from ....vocab import StreamChunk, StructuredOutputSupport
from ....wire.pump import Translator, translate_reads
from ..materialize import ModelDescriptor
from .common import ResponseRecord
from .registry import API_NAMES, protocol
from .spec import AuthContext, WireProtocol

__all__ = [
    "API_NAMES",
    "AuthContext",
    "ResponseRecord",
    "Translator",
    "WireProtocol",
    "make_translator",
    "protocol",
    "structured_output_support",
    "translate_sse",
]


def structured_output_support(model: ModelDescriptor) -> StructuredOutputSupport:
    """How a model's protocol honours `GenerateOptions.output` (strict schema, JSON mode, or
    emulated through a forced answer tool the provider does not validate)."""
    return protocol(model.api).structured_output(model)


def make_translator(api: str, record: ResponseRecord) -> Translator:
    """The translator for protocol `api` writing into `record`."""
    return protocol(api).translator(record)


def translate_sse(
    api: str,
    reads: Iterable[bytes],
    *,
    provider: str,
    model: str,
    context_window: int | None = None,
) -> list[StreamChunk]:
    """Translate a whole response body, given as reads of raw bytes, into chunks (no I/O),
    framed as the protocol frames it (SSE, or Bedrock's binary event stream)."""
    record = ResponseRecord(api=api, provider=provider, model=model, context_window=context_window)
    out: list[StreamChunk] = []
    spec = protocol(api)
    translate_reads(
        reads,
        spec.translator(record),
        out,
        framer=spec.framer() if spec.framer is not None else None,
    )
    return out
