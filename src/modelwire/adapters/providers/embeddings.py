"""One embeddings request of a providers route: every check before I/O, the family's endpoint
and body, the route's auth, transport settings and client-side rate limit, then the answer
decoded into the caller's vector form with usage and cost.

Which family a route speaks follows its models' chat protocol: ``openai-completions`` and
``openai-responses`` → ``openai`` (``{base_url}/embeddings``: OpenAI and every OpenAI-compatible
server), ``azure-openai-*`` → ``openai`` at Azure's URL (v1 ``{resource}/openai/v1/embeddings``;
a dated ``api_version`` ``{resource}/openai/deployments/{model}/embeddings?api-version=``),
``mistral-conversations`` → ``mistral``, ``google-generative-ai`` → ``gemini``
(``{base_url}/models/{model}:embedContent``, ``:batchEmbedContents`` for more than one), ``bedrock-converse-stream`` → ``titan`` or
``cohere`` by model id (``{base_url}/model/{id}/invoke``, signed as chat calls are). Anthropic
has no embeddings API: ``UNSUPPORTED_OPTION``.

The model: the route's config entry when it lists the model (price from its ``cost``), else a
model of `embedding_models` of the route's family, else ``UNKNOWN_MODEL`` naming the route.
A `dimensions` the known model does not take is ``UNSUPPORTED_OPTION`` naming the sizes it takes
(a fixed-size model asked for its own size sends nothing). The ``openai`` family asks for base64
(about a third of the bytes of JSON floats, and no float parsing); an answer in floats is read
too. HTTP failures map exactly as a chat call's (`wire.http.stream_post` with the protocol's
`http_error`).
"""

from __future__ import annotations

import array
import asyncio
import base64
import time
from collections.abc import Callable, Mapping
from decimal import Decimal
from typing import Final
from urllib.parse import quote, urlsplit

from ...errors import ErrorCode, LlmError
from ...vocab import EmbedLimits, EmbedOptions, EmbedResult, ModelPricing, TokenUsage, Vector
from ...wire import ratelimit_reads
from ...wire.attribution import attribution_headers
from ...wire.http import stream_post
from ...wire.ratelimit import RateLimiter
from ...wire.transport import Transport
from ...wire.watchdog import IdleWatchdog, idle_text, ms_text
from .config import ResolvedProfile
from .credentials import auth_headers, resolve_route_key
from .dispatch import resolve_endpoint, sign
from .embedding_models import FAMILY_LIMITS, EmbeddingModel, Family, known_embedding_model
from .embeddings_wire import RawVector, b64_floats, decode_answer, encode_body
from .materialize import ModelDescriptor
from .protocols import protocol
from .protocols.azure_openai import V1_VERSIONS, normalize_azure_base_url
from .protocols.request import BuiltRequest, join_url
from .snapshot import Snapshot

__all__ = ["embed_limits", "embed_request"]

_FAMILIES: Final[dict[str, Family]] = {
    "openai-completions": "openai",
    "openai-responses": "openai",
    "azure-openai-responses": "openai",
    "azure-openai-completions": "openai",
    "mistral-conversations": "mistral",
    "google-generative-ai": "gemini",
    "bedrock-converse-stream": "titan",  # or cohere, by model id
}
_ZERO: Final = Decimal(0)


class _Target:
    """What one request needs: profile, the carrier model (endpoint, api, headers), family,
    the known model (None: config-only) and the price."""

    __slots__ = ("carrier", "family", "known", "pricing", "profile")

    def __init__(
        self,
        profile: ResolvedProfile,
        carrier: ModelDescriptor,
        family: Family,
        known: EmbeddingModel | None,
        pricing: ModelPricing | None,
    ) -> None:
        self.profile = profile
        self.carrier = carrier
        self.family = family
        self.known = known
        self.pricing = pricing


def _target(snapshot: Snapshot, options: EmbedOptions) -> _Target:
    route, model = options.provider, options.model
    profile = snapshot.profiles.get(route)
    if profile is None:
        raise LlmError(f'no provider route "{route}" is configured', ErrorCode.NO_ADAPTER)
    entry = profile.models.get(model)
    carrier = entry or next(iter(profile.models.values()), None)
    if carrier is None:
        raise LlmError(f'provider "{route}" serves no model "{model}"', ErrorCode.UNKNOWN_MODEL)
    family = _FAMILIES.get(carrier.api)
    if family is None:
        raise LlmError(
            f'provider "{route}" ({carrier.api}) has no embeddings API',
            ErrorCode.UNSUPPORTED_OPTION,
        )
    if family == "titan" and "cohere.embed" in model:
        family = "cohere"
    known = known_embedding_model(model, family)
    if entry is None and known is None:
        raise LlmError(
            f'provider "{route}" serves no embedding model "{model}" that modelwire knows; list '
            f"it in providers.{route}.models to use it",
            ErrorCode.UNKNOWN_MODEL,
        )
    pricing = entry.pricing if entry is not None else None
    if pricing is None and known is not None and known.price is not None:
        pricing = ModelPricing(input=known.price, output=_ZERO)
    return _Target(profile, carrier, family, known, pricing)


def embed_limits(snapshot: Snapshot, options: EmbedOptions) -> EmbedLimits:
    """The inputs (and about the tokens) one request of the route's family takes."""
    try:
        family = _target(snapshot, options).family
    except LlmError:
        return EmbedLimits()  # `embed_request` raises the failure itself
    count, tokens = FAMILY_LIMITS[family]
    return EmbedLimits(max_inputs=count, max_request_tokens=tokens)


def _dimensions(target: _Target, options: EmbedOptions) -> int | None:
    size, known = options.dimensions, target.known
    if size is None or known is None:
        return size
    if not known.takes(size):
        raise LlmError(
            f'provider "{options.provider}" model "{options.model}" does not take dimensions='
            f"{size}; it takes {known.sizes_text()}",
            ErrorCode.UNSUPPORTED_OPTION,
        )
    if known.min_dimensions is None and not known.choices:
        return None  # a fixed-size model asked for its own size: nothing to send
    return size


def _url(target: _Target, base: str, model: str, count: int) -> str:
    carrier = target.carrier
    match target.family:
        case "openai" if carrier.api.startswith("azure-"):
            version = carrier.api_version
            root = normalize_azure_base_url(base)
            query = "" if version is None else f"?api-version={quote(version, safe='')}"
            if version is None or version in V1_VERSIONS:
                return root + "/embeddings" + (query if version == "preview" else "")
            if "/openai/deployments/" in urlsplit(root).path + "/":
                return root + "/embeddings" + query
            for suffix in ("/openai/v1", "/openai"):
                root = root.removesuffix(suffix)
            return f"{root}/openai/deployments/{quote(model, safe='')}/embeddings{query}"
        case "openai":
            return join_url(base, "/embeddings")
        case "mistral":
            trimmed = base.rstrip("/")
            return trimmed + ("/embeddings" if trimmed.endswith("/v1") else "/v1/embeddings")
        case "gemini":
            resource = model if model.startswith("models/") else f"models/{model}"
            method = "embedContent" if count == 1 else "batchEmbedContents"
            return join_url(base, f"/{resource}:{method}")
        case "titan" | "cohere":
            return join_url(base, f"/model/{quote(model, safe='')}/invoke")


def _headers(
    profile: ResolvedProfile, carrier: ModelDescriptor, auth: dict[str, str]
) -> dict[str, str]:
    headers = {"Content-Type": "application/json", "Accept": "application/json"}
    headers.update(dict(carrier.headers))
    headers.update(auth)
    agent = attribution_headers()
    lowered = {a.lower() for a in agent}
    for name, value in profile.headers:
        if name.lower() not in lowered:
            headers[name] = value
    headers.update(agent)
    return headers


def _vector(raw: RawVector, form: str | None) -> tuple[Vector, int]:
    """One vector in the caller's form, and its length."""
    if isinstance(raw, str):
        if form == "base64":  # handed on as it came: its length is counted, never decoded
            pad = 2 if raw.endswith("==") else 1 if raw.endswith("=") else 0
            return raw, (len(raw) * 3 // 4 - pad) // 4
        values = array.array("f")
        values.frombytes(b64_floats(raw))
        return (values if form == "array" else values.tolist()), len(values)
    if form == "array":
        return array.array("f", raw), len(raw)
    if form == "base64":
        packed = array.array("f", raw)
        if packed.itemsize != 4:  # pragma: no cover - every supported platform has float32 "f"
            raise AssertionError("array('f') is not float32")
        return base64.b64encode(packed.tobytes()).decode("ascii"), len(raw)
    return raw, len(raw)


async def embed_request(
    snapshot: Snapshot,
    options: EmbedOptions,
    *,
    env: Mapping[str, str],
    clock: Callable[[], float] = time.time,
    limiter: RateLimiter | None = None,
    transport: Transport | None = None,
) -> EmbedResult:
    """One provider request for `options.inputs` (already within `embed_limits`)."""
    target = _target(snapshot, options)
    profile, family = target.profile, target.family
    size = _dimensions(target, options)
    spec = protocol(target.carrier.api)
    key = None if profile.auth == "none" else resolve_route_key(profile, env)
    auth = auth_headers(profile, spec, key)
    carrier = resolve_endpoint(profile, target.carrier, env)
    url = _url(target, carrier.base_url, options.model, len(options.inputs))
    body = encode_body(
        family,
        options.model,
        options.inputs,
        dimensions=size,
        wire_base64=family == "openai",
        provider_options=options.provider_options,
        route=profile.route,
    )
    headers = _headers(profile, carrier, auth)
    await sign(
        spec,
        profile,
        key,
        BuiltRequest(url=url, headers={}, body=body),
        headers,
        env,
        clock,
        transport,
    )
    total = options.timeout_ms if options.timeout_ms is not None else profile.timeout_ms
    where = f'provider "{profile.route}" model "{options.model}"'
    watchdog = IdleWatchdog(
        profile.stream_idle_timeout_ms, message=idle_text(profile.stream_idle_timeout_ms, "")
    )
    answer_headers: dict[str, str] = {}

    def heard(found: Mapping[str, str]) -> None:
        answer_headers.update(found)
        if limiter is not None:
            limiter.observe(profile.route, found)

    reads = stream_post(
        url,
        body,
        headers,
        provider=profile.display_name,
        endpoint=carrier.base_url,
        watchdog=watchdog,
        fallback_request_id_headers=("request-id", "x-amzn-requestid"),
        refine=spec.http_error,
        encoded_url=spec.signed_path,
        on_headers=heard,
        settings=profile.transport_settings,
        transport=transport,
    )
    permit = None
    if limiter is not None:  # the permit goes back with the tokens the answer reported
        estimate = ratelimit_reads.estimate_tokens(body, None)
        permit = await limiter.acquire(profile.route, estimate, limits=profile.rate_limits)
    del body
    tokens: int | None = None
    deadline = asyncio.timeout(total / 1000 if total else None)  # the call's total deadline
    try:
        try:
            async with deadline:
                parts = [piece async for piece in reads]
        except TimeoutError:
            if not deadline.expired():
                raise
            raise LlmError(
                f"{where}: the call exceeded its total deadline of {ms_text(total or 0)}ms (timeout_ms)",
                ErrorCode.TIMEOUT,
            ) from None
        answer = decode_answer(
            family,
            b"".join(parts),
            answer_headers,
            len(options.inputs),
            route=profile.route,
            model=options.model,
        )
        tokens = answer.input_tokens
    finally:
        await reads.aclose()
        if limiter is not None and permit is not None:
            limiter.release(permit, tokens)
    form = options.encoding_format
    vectors: list[Vector] = []
    dims: set[int] = set()
    for raw in answer.vectors:
        vector, length = _vector(raw, form)
        vectors.append(vector)
        dims.add(length)
    if len(dims) != 1 or 0 in dims:
        raise LlmError(
            f"{where} answered vectors of lengths {sorted(dims)} in one response",
            ErrorCode.MALFORMED_RESPONSE,
        )
    usage = None if answer.input_tokens is None else TokenUsage(answer.input_tokens, 0)
    pricing = target.pricing
    cost = None if pricing is None or usage is None else pricing.cost(usage)
    return EmbedResult(
        vectors=tuple(vectors),
        usage=usage,
        provider=profile.route,
        model=options.model,
        dimensions=dims.pop(),
        cost=cost,
    )
