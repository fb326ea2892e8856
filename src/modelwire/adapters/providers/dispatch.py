"""One call of a providers route, up to its first byte: every check before I/O, the endpoint
(account placeholders, the AWS region), the request of the route's protocol, its auth (a key
header, a profile header, SigV4, or nothing on a keyless route), the idle budget, and the
transport (HTTP + SSE or event stream, or a WebSocket) — handed to the pump as a `StreamSource`.
"""

from __future__ import annotations

import functools
import re
import time
from collections.abc import AsyncGenerator, Callable, Mapping, Sequence
from typing import Final

import msgspec

from ...errors import ErrorCode, LlmError
from ...vocab import GenerateOptions, ImageBlock, Message
from ...wire.attribution import attribution_headers
from ...wire.credentials import credential_values
from ...wire.http import stream_post_pieces
from ...wire.pump import Read, StreamSource
from ...wire.ratelimit import RateLimiter
from ...wire.transport import Transport
from ...wire.watchdog import IdleWatchdog, idle_text
from ..shape import refuse_free_text_tools
from .config import ResolvedProfile
from .context import to_context
from .credentials import auth_headers, resolve_route_key
from .documents import check_media
from .google_auth import credentials_project
from .images import ImageLoader, prepare_images
from .limited import limited_reads, request_tokens
from .materialize import ModelDescriptor
from .protocols import AuthContext, ResponseRecord, WireProtocol, protocol
from .protocols.request import BuiltRequest, RequestOptions
from .replay_state import ReplayDegrade, restore_assistant
from .snapshot import Snapshot

__all__ = ["open_call", "resolve_endpoint", "route_region", "sign"]

_PLACEHOLDER: Final = re.compile(r"\{([A-Z_]+)\}")
_PLACEHOLDER_FIELDS: Final = {
    "CLOUDFLARE_ACCOUNT_ID": "account_id",
    "CLOUDFLARE_GATEWAY_ID": "gateway_id",
}
_BEDROCK: Final = frozenset({"bedrock-converse-stream", "anthropic-bedrock"})
_VERTEX: Final = "anthropic-vertex"
_SEGMENT: Final = re.compile(r"[a-z0-9-]{1,64}")


def route_region(profile: ResolvedProfile, env: Mapping[str, str]) -> str | None:
    """The route's AWS region: the profile's `region`, else ``AWS_REGION``, else
    ``AWS_DEFAULT_REGION`` (None when none is set)."""
    return profile.region or env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION") or None


def resolve_endpoint(
    profile: ResolvedProfile, model: ModelDescriptor, env: Mapping[str, str]
) -> ModelDescriptor:
    """`model` with its final base URL: catalog placeholders (``{CLOUDFLARE_ACCOUNT_ID}``)
    filled from the profile field or the environment, and a Bedrock route's URL built for its
    region (unless the profile gave its own `base_url`). A value that cannot be found is
    `INVALID_CONFIG` naming the field and the variable, before any I/O."""
    url = model.base_url
    if model.api in _BEDROCK and profile.base_url is None:
        region = route_region(profile, env)
        if region is None:
            raise LlmError(
                f'provider route "{profile.route}" has no AWS region: set '
                f"providers.{profile.route}.region, AWS_REGION or AWS_DEFAULT_REGION",
                ErrorCode.INVALID_CONFIG,
            )
        if not _SEGMENT.fullmatch(region):
            raise LlmError(
                f'provider route "{profile.route}": AWS region {region[:64]!r} is not a region '
                "name",
                ErrorCode.INVALID_CONFIG,
            )
        url = f"https://bedrock-runtime.{region}.amazonaws.com"
    elif model.api == _VERTEX:
        url = _vertex_base(profile, env)
    if "{" in url:

        def fill(match: re.Match[str]) -> str:
            name = match.group(1)
            field = _PLACEHOLDER_FIELDS.get(name)
            value = getattr(profile, field) if field is not None else None
            value = value or env.get(name, "").strip()
            if not value or not re.fullmatch(r"[A-Za-z0-9._-]{1,128}", value):
                where = f"providers.{profile.route}.{field} or " if field else ""
                raise LlmError(
                    f'provider route "{profile.route}" model "{model.id}": its endpoint needs '
                    f"{name}; set {where}{name}",
                    ErrorCode.INVALID_CONFIG,
                )
            return value

        url = _PLACEHOLDER.sub(fill, url)
    return model if url == model.base_url else msgspec.structs.replace(model, base_url=url)


def _vertex_base(profile: ResolvedProfile, env: Mapping[str, str]) -> str:
    """A Vertex route's model collection URL, ``{root}/v1/projects/{project}/locations/
    {location}/publishers/anthropic/models``: the location is the route's `region` (else
    ``GOOGLE_CLOUD_LOCATION``, ``CLOUD_ML_REGION``), the project its `project` (else
    ``GOOGLE_CLOUD_PROJECT``, ``GCLOUD_PROJECT``, ``ANTHROPIC_VERTEX_PROJECT_ID``, the
    credentials file's), the root its `base_url` (else the location's Vertex endpoint;
    ``global`` has no location prefix)."""
    route = profile.route
    location = (
        profile.region or env.get("GOOGLE_CLOUD_LOCATION") or env.get("CLOUD_ML_REGION") or ""
    ).strip()
    if not _SEGMENT.fullmatch(location):
        raise LlmError(
            f'provider route "{route}" has no Vertex AI location'
            + (f" ({location[:64]!r} is not one)" if location else "")
            + f": set providers.{route}.region (e.g. us-east5 or global), GOOGLE_CLOUD_LOCATION "
            "or CLOUD_ML_REGION",
            ErrorCode.INVALID_CONFIG,
        )
    project = (
        profile.project
        or next(
            (
                env[name].strip()
                for name in (
                    "GOOGLE_CLOUD_PROJECT",
                    "GCLOUD_PROJECT",
                    "ANTHROPIC_VERTEX_PROJECT_ID",
                )
                if env.get(name, "").strip()
            ),
            None,
        )
        or credentials_project(env)
    )
    if not project or not re.fullmatch(r"[A-Za-z0-9._:-]{1,128}", project):
        raise LlmError(
            f'provider route "{route}" has no Google Cloud project: set '
            f"providers.{route}.project, GOOGLE_CLOUD_PROJECT or GCLOUD_PROJECT",
            ErrorCode.INVALID_CONFIG,
        )
    host = "aiplatform.googleapis.com"
    root = profile.base_url or (
        f"https://{host}" if location == "global" else f"https://{location}-{host}"
    )
    return (
        f"{root.rstrip('/')}/v1/projects/{project}/locations/{location}/publishers/anthropic/models"
    )


def _check(snapshot: Snapshot, options: GenerateOptions) -> tuple[ResolvedProfile, ModelDescriptor]:
    profile = snapshot.profiles.get(options.provider)
    if profile is None:
        raise LlmError(
            f'no provider route "{options.provider}" is configured', ErrorCode.NO_ADAPTER
        )
    model = profile.models.get(options.model)
    if model is None:
        raise LlmError(
            f'provider "{profile.route}" serves no model "{options.model}"',
            ErrorCode.UNKNOWN_MODEL,
        )
    return profile, model


def _effort(
    profile: ResolvedProfile, model: ModelDescriptor, options: GenerateOptions, spec: WireProtocol
) -> str | None:
    effort = options.reasoning_effort or profile.reasoning
    carried = spec.reasoning is None or spec.reasoning(model)
    levels = model.levels if carried else ("off",)
    if effort is not None and effort not in levels:
        raise LlmError(
            f'provider "{profile.route}" model "{model.id}" does not support reasoning effort '
            f'"{effort}"; it supports ' + ", ".join(levels),
            ErrorCode.UNSUPPORTED_REASONING_EFFORT,
        )
    return effort


def _request(
    spec: WireProtocol,
    profile: ResolvedProfile,
    model: ModelDescriptor,
    effort: str | None,
    options: GenerateOptions,
    messages: Sequence[Message],
    read_image: Callable[[ImageBlock], bytes] | None,
    on_degrade: ReplayDegrade | None,
) -> BuiltRequest:
    ctx = to_context(
        messages,
        system=options.system,
        tools=options.tools or (),
        restore=lambda m, s: restore_assistant(m, s, on_degrade),
        read_image=read_image,
    )
    return spec.build(
        model,
        ctx,
        RequestOptions(
            effort=effort,
            temperature=options.temperature,
            max_tokens=options.max_tokens,
            session_id=options.session_id,
            cache_retention=profile.cache_retention,
            thinking_budgets=profile.thinking_budgets,
            output=options.output,
            tool_choice=options.tool_choice,
            parallel_tool_calls=options.parallel_tool_calls,
            provider_options=options.provider_options,
        ),
    )


def _headers(
    profile: ResolvedProfile, model: ModelDescriptor, request: BuiltRequest, auth: dict[str, str]
) -> dict[str, str]:
    headers = {"Content-Type": "application/json", **dict(model.headers), **request.headers}
    headers.update(auth)
    agent = attribution_headers()
    lowered = {a.lower() for a in agent}
    for name, value in profile.headers:
        if name.lower() not in lowered:
            headers[name] = value
    headers.update(agent)
    return headers


async def sign(
    spec: WireProtocol,
    profile: ResolvedProfile,
    key: str | None,
    request: BuiltRequest,
    headers: dict[str, str],
    env: Mapping[str, str],
    clock: Callable[[], float],
    transport: Transport | None,
) -> None:
    """Add a signing protocol's auth headers (SigV4, a minted Google access token) to `headers`
    when the route signs: no key, auth not "none", and no key header of its own configured."""
    if (
        not spec.signs
        or key is not None
        or profile.auth == "none"
        or any(n.lower() in spec.key_header_names for n, _ in profile.headers)
    ):
        return
    context = AuthContext(
        profile.route, env, route_region(profile, env), clock, profile.transport_settings, transport
    )
    if spec.authorize is not None:
        headers.update(spec.authorize(request, headers, context))
    if spec.authorize_async is not None:
        headers.update(await spec.authorize_async(request, headers, context))


def _watchdog(profile: ResolvedProfile) -> IdleWatchdog:
    """The idle budget of the reads (the call's deadlines are the runtime boundary's)."""
    ms = profile.stream_idle_timeout_ms
    return IdleWatchdog(ms, message=idle_text(ms, ""))


async def open_call(
    snapshot: Snapshot,
    options: GenerateOptions,
    *,
    env: Mapping[str, str],
    load_image: ImageLoader | None,
    on_degrade: ReplayDegrade | None,
    clock: Callable[[], float] = time.time,
    limiter: RateLimiter | None = None,
    transport: Transport | None = None,
) -> StreamSource:
    """Every check and the request build (before any I/O), then the reads and translator;
    with a `limiter`, the reads wait for the route's permit first (`limited_reads`)."""
    profile, model = _check(snapshot, options)
    spec = protocol(model.api)
    effort = _effort(profile, model, options, spec)
    if not spec.free_text_tools:
        refuse_free_text_tools(options.tools, profile.route, model.api)
    key = None if profile.auth == "none" else resolve_route_key(profile, env)
    auth = auth_headers(profile, spec, key)
    model = resolve_endpoint(profile, model, env)
    check_media(options.messages, model)
    messages, reader = await prepare_images(
        options.messages,
        model=model,
        max_request_image_bytes=profile.max_request_image_bytes,
        load=load_image,
    )
    request = _request(spec, profile, model, effort, options, messages, reader, on_degrade)
    headers = _headers(profile, model, request, auth)
    await sign(spec, profile, key, request, headers, env, clock, transport)
    record = ResponseRecord(
        api=model.api,
        provider=profile.route,
        model=model.id,
        context_window=model.context_window,
        secrets=credential_values(headers),
    )
    if options.output is not None and spec.structured_output(model) == "emulated":
        record.answer_tool = options.output.name  # a forced tool whose input is the answer
    watchdog = _watchdog(profile)
    framer = spec.framer() if spec.framer is not None else None
    reads: AsyncGenerator[Read, None]
    if profile.transport == "websocket":
        from ...wire.websocket import MessageFramer, responses_websocket

        framer = MessageFramer()
        reads = responses_websocket(
            request.url,
            request.body,
            headers,
            provider=profile.display_name,
            endpoint=model.base_url,
            watchdog=watchdog,
            settings=profile.transport_settings,
            transport=transport,
        )
    else:
        observe = None if limiter is None else functools.partial(limiter.observe, profile.route)
        reads = stream_post_pieces(  # the pump joins the pieces for a binary framer
            request.url,
            request.body,
            headers,
            provider=profile.display_name,
            endpoint=model.base_url,
            watchdog=watchdog,
            fallback_request_id_headers=("request-id",),
            refine=spec.http_error,
            encoded_url=spec.signed_path,
            on_headers=observe,
            settings=profile.transport_settings,
            transport=transport,
        )
    if limiter is not None:
        reads = limited_reads(reads, limiter, profile, request_tokens(request.body, model), record)
    return StreamSource(reads, spec.translator(record), watchdog, framer)
