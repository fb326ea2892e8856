"""The embedding request and answer of each wire family, as the providers document them.

- ``openai`` — OpenAI "Create embeddings" (``POST /v1/embeddings``; also Azure OpenAI, and
  the OpenAI-compatible servers: Ollama, vLLM, llama.cpp): ``{"model", "input": [...],
  "dimensions"?, "encoding_format"?}`` → ``{"data": [{"index", "embedding"}], "usage":
  {"prompt_tokens", "total_tokens"}}``; an ``embedding`` is a float list, or with
  ``encoding_format: "base64"`` the little-endian float32 bytes in base64.
- ``mistral`` — Mistral "Embeddings" (``POST /v1/embeddings``): the same shape, with
  ``output_dimension`` for the size.
- ``gemini`` — Gemini API ``models.embedContent`` for one input (``{"content": {"parts":
  [{"text"}]}, "outputDimensionality"?}`` → ``{"embedding": {"values": [...]}}``) and
  ``models.batchEmbedContents`` for more (``{"requests": [{"model": "models/<id>", "content",
  ...}]}`` → ``{"embeddings": [{"values"}]}`` in request order); no token counts.
- ``titan`` — Bedrock InvokeModel with Amazon Titan Text Embeddings: ``{"inputText",
  "dimensions"?, "normalize"?}`` → ``{"embedding": [...], "inputTextTokenCount"}``.
- ``cohere`` — Bedrock InvokeModel with Cohere Embed: ``{"texts": [...], "input_type",
  "embedding_types": ["float"]}`` → ``{"embeddings": {"float": [[...]]}}`` (or the bare list),
  the token count in the ``X-Amzn-Bedrock-Input-Token-Count`` header.

`provider_options` are appended to the body (Gemini: to each request; a field this module writes
itself is refused with ``INVALID_OPTION``, except Cohere's ``input_type``, default
``search_document``). A malformed answer is ``MALFORMED_RESPONSE`` naming the route.
"""

from __future__ import annotations

import base64
import sys
from collections.abc import Mapping, Sequence
from typing import Any, Final, TypeAlias

import msgspec
from msgspec import UNSET, UnsetType

from ...errors import ErrorCode, LlmError
from ...vocab.json import JsonValue
from ..shape import merge_provider_options
from .embedding_models import Family

__all__ = ["RawVector", "WireAnswer", "decode_answer", "encode_body"]

RawVector: TypeAlias = "str | list[float]"
"""One vector as it came: base64 float32 text, or floats."""

_ENCODE: Final = msgspec.json.Encoder()
_BIG_ENDIAN: Final = sys.byteorder == "big"


class WireAnswer(msgspec.Struct, frozen=True, kw_only=True):
    """The vectors of one answer in input order and the input tokens it reported (None: none)."""

    vectors: list[RawVector]
    input_tokens: int | None


class _OpenAIBody(msgspec.Struct, kw_only=True, omit_defaults=True):
    model: str
    input: Sequence[str]
    dimensions: int | UnsetType = UNSET
    encoding_format: str | UnsetType = UNSET


class _MistralBody(msgspec.Struct, kw_only=True, omit_defaults=True):
    model: str
    input: Sequence[str]
    output_dimension: int | UnsetType = UNSET


class _Part(msgspec.Struct):
    text: str


class _Content(msgspec.Struct):
    parts: tuple[_Part, ...]


class _GeminiRequest(msgspec.Struct, kw_only=True, omit_defaults=True):
    model: str | UnsetType = UNSET  # in the path for embedContent, in each request of a batch
    content: _Content
    outputDimensionality: int | UnsetType = UNSET


class _TitanBody(msgspec.Struct, kw_only=True, omit_defaults=True):
    inputText: str
    dimensions: int | UnsetType = UNSET


class _CohereBody(msgspec.Struct, kw_only=True):
    texts: Sequence[str]
    input_type: str = "search_document"
    embedding_types: tuple[str, ...] = ("float",)


def encode_body(
    family: Family,
    model: str,
    inputs: Sequence[str],
    *,
    dimensions: int | None,
    wire_base64: bool,
    provider_options: Mapping[str, JsonValue] | None,
    route: str,
) -> bytes:
    """The JSON body of one request of `family` for `inputs`."""
    size: int | UnsetType = UNSET if dimensions is None else dimensions
    match family:
        case "openai":
            body: msgspec.Struct = _OpenAIBody(
                model=model,
                input=inputs,
                dimensions=size,
                encoding_format="base64" if wire_base64 else UNSET,
            )
        case "mistral":
            body = _MistralBody(model=model, input=inputs, output_dimension=size)
        case "titan":
            body = _TitanBody(inputText=inputs[0], dimensions=size)
        case "cohere":
            options = dict(provider_options or {})
            kind = options.pop("input_type", "search_document")
            encoded = _ENCODE.encode(_CohereBody(texts=inputs, input_type=str(kind)))
            return merge_provider_options(
                encoded, _CohereBody.__struct_fields__, options or None, route
            )
        case "gemini":
            resource = model if model.startswith("models/") else f"models/{model}"
            fields = _GeminiRequest.__struct_fields__
            one = len(inputs) == 1  # embedContent: the request alone, its model in the path
            items = [
                merge_provider_options(
                    _ENCODE.encode(
                        _GeminiRequest(
                            model=UNSET if one else resource,
                            content=_Content((_Part(text),)),
                            outputDimensionality=size,
                        )
                    ),
                    fields,
                    provider_options,
                    route,
                )
                for text in inputs
            ]
            return items[0] if one else b'{"requests":[' + b",".join(items) + b"]}"
        case _:  # pragma: no cover - Family is closed
            raise AssertionError(family)
    return merge_provider_options(
        _ENCODE.encode(body), type(body).__struct_fields__, provider_options, route
    )


class _OpenAIItem(msgspec.Struct):
    embedding: str | list[float]
    index: int | None = None


class _OpenAIUsage(msgspec.Struct):
    prompt_tokens: int | None = None
    total_tokens: int | None = None


class _OpenAIAnswer(msgspec.Struct):
    data: list[_OpenAIItem]
    usage: _OpenAIUsage | None = None


class _Values(msgspec.Struct):
    values: list[float]


class _GeminiAnswer(msgspec.Struct):
    embeddings: list[_Values] | None = None  # batchEmbedContents
    embedding: _Values | None = None  # embedContent


class _TitanAnswer(msgspec.Struct):
    embedding: list[float]
    inputTextTokenCount: int | None = None


class _CohereTyped(msgspec.Struct):
    floats: list[list[float]] = msgspec.field(name="float")


class _CohereAnswer(msgspec.Struct):
    embeddings: list[list[float]] | _CohereTyped


_DECODERS: Final[dict[str, msgspec.json.Decoder[Any]]] = {
    "openai": msgspec.json.Decoder(_OpenAIAnswer),
    "mistral": msgspec.json.Decoder(_OpenAIAnswer),
    "gemini": msgspec.json.Decoder(_GeminiAnswer),
    "titan": msgspec.json.Decoder(_TitanAnswer),
    "cohere": msgspec.json.Decoder(_CohereAnswer),
}


def _malformed(route: str, model: str, why: str) -> LlmError:
    return LlmError(
        f'provider "{route}" model "{model}" answered a malformed embeddings response: {why}',
        ErrorCode.MALFORMED_RESPONSE,
    )


def _openai(answer: _OpenAIAnswer, count: int, route: str, model: str) -> WireAnswer:
    data = answer.data
    if len(data) != count:
        raise _malformed(route, model, f"{len(data)} vectors for {count} inputs")
    vectors: list[RawVector]
    if all(item.index is None for item in data) or all(
        item.index == i for i, item in enumerate(data)
    ):
        vectors = [item.embedding for item in data]
    else:
        slots: list[RawVector | None] = [None] * count
        for item in data:
            index = item.index
            if index is None or not 0 <= index < count or slots[index] is not None:
                raise _malformed(route, model, f"vector index {index!r} is missing or repeated")
            slots[index] = item.embedding
        vectors = [v for v in slots if v is not None]
    usage = answer.usage
    tokens = None if usage is None else usage.prompt_tokens
    if tokens is None and usage is not None:
        tokens = usage.total_tokens
    return WireAnswer(vectors=vectors, input_tokens=tokens)


def decode_answer(
    family: Family,
    body: bytes,
    headers: Mapping[str, str],
    count: int,
    *,
    route: str,
    model: str,
) -> WireAnswer:
    """The vectors (in input order) and reported input tokens of one answer to `count` inputs."""
    try:
        answer: object = _DECODERS[family].decode(body)  # Any: one of five answer types
    except msgspec.DecodeError as exc:
        raise _malformed(route, model, str(exc)) from exc
    match answer:
        case _OpenAIAnswer():
            return _openai(answer, count, route, model)
        case _GeminiAnswer():
            found = answer.embeddings or ([answer.embedding] if answer.embedding else [])
            vectors: list[RawVector] = [e.values for e in found]
            tokens = None
        case _TitanAnswer():
            vectors, tokens = [answer.embedding], answer.inputTextTokenCount
        case _CohereAnswer():
            typed = answer.embeddings
            vectors = list(typed.floats if isinstance(typed, _CohereTyped) else typed)
            raw = headers.get("X-Amzn-Bedrock-Input-Token-Count", "")
            tokens = int(raw) if raw.strip().isdigit() else None
        case _:  # pragma: no cover - the decoders are closed
            raise AssertionError(answer)
    if len(vectors) != count:
        raise _malformed(route, model, f"{len(vectors)} vectors for {count} inputs")
    return WireAnswer(vectors=vectors, input_tokens=tokens)


def b64_floats(text: str) -> bytes:
    """The float32 bytes (native order) of one base64 vector."""
    data = base64.b64decode(text)
    if len(data) % 4:
        raise ValueError("base64 vector is not a whole number of float32 values")
    if _BIG_ENDIAN:  # pragma: no cover - the wire is little-endian
        import array

        values = array.array("f", data)
        values.byteswap()
        return values.tobytes()
    return data
