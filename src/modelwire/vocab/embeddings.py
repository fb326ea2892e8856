"""Embedding requests and results: `EmbedOptions` in, `EmbedResult` out (DESIGN §9).

`EmbedOptions.encoding_format` is the form the caller gets each vector in, whatever the wire
carried (the adapter picks the smaller wire form it can):

- ``None`` / ``"float"`` — a ``list[float]`` per input;
- ``"array"`` — an ``array.array("f")`` per input (4 bytes a value, no Python float objects);
- ``"base64"`` — a ``str`` per input: the little-endian float32 bytes, base64-encoded (OpenAI's
  ``encoding_format: "base64"`` form, handed on as is by a gateway).
"""

from __future__ import annotations

import array
from collections.abc import Mapping
from decimal import Decimal
from typing import Literal, TypeAlias

import msgspec

from .json import JsonValue, freeze_json
from .usage import TokenUsage

__all__ = [
    "ENCODING_FORMATS",
    "EmbedLimits",
    "EmbedOptions",
    "EmbedResult",
    "EncodingFormat",
    "Vector",
]

EncodingFormat: TypeAlias = Literal["float", "array", "base64"]
ENCODING_FORMATS: tuple[str, ...] = ("float", "array", "base64")

Vector: TypeAlias = "list[float] | array.array[float] | str"
"""One embedding in the caller's `encoding_format`."""


class EmbedOptions(msgspec.Struct, frozen=True, omit_defaults=True):
    """One embedding call: `inputs` (non-empty strings) of route `provider`'s `model`.

    `dimensions` asks for shorter vectors where the model takes it (OpenAI ``dimensions``,
    Gemini ``outputDimensionality``, Mistral ``output_dimension``, Titan v2 ``dimensions``);
    `provider_options` are extra body fields of the provider's request (Gemini ``taskType``,
    Cohere ``input_type``, ...); `timeout_ms` bounds each request (None: the route's). The
    runtime checks every field before any I/O (`INVALID_OPTION`).
    """

    provider: str
    model: str
    inputs: tuple[str, ...] = ()
    dimensions: int | None = None
    encoding_format: EncodingFormat | None = None
    provider_options: Mapping[str, JsonValue] | None = None
    timeout_ms: int | None = None

    def __post_init__(self) -> None:
        inputs: object = self.inputs
        if isinstance(inputs, list):  # a str stays as given: the runtime refuses it by name
            msgspec.structs.force_setattr(self, "inputs", tuple(inputs))
        if self.provider_options is not None:
            frozen = freeze_json(self.provider_options)
            msgspec.structs.force_setattr(self, "provider_options", frozen)


class EmbedResult(msgspec.Struct, frozen=True, kw_only=True):
    """The vectors of one call, one per input in input order, and what the call used.

    `usage` is None when the provider reports no token count (Gemini); `cost` is None when the
    model's price is unknown. `dimensions` is the length of every vector.
    """

    vectors: tuple[Vector, ...]
    usage: TokenUsage | None
    provider: str
    model: str
    dimensions: int
    cost: Decimal | None = None


class EmbedLimits(msgspec.Struct, frozen=True, kw_only=True):
    """How much one provider request of a model takes: `max_inputs` strings and, when set, about
    `max_request_tokens` tokens in all (estimated as UTF-8 bytes / 4). `LlmRuntime.embed` splits
    a longer input list into requests within both and rejoins the vectors in input order."""

    max_inputs: int = 2048
    max_request_tokens: int | None = None
