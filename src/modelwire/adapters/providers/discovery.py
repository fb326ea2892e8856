"""Model discovery: which models can a draft endpoint serve? (spec §6). Stores nothing.

Catalog providers are answered from the installed catalog without network or credentials; other
endpoints are asked `GET <base_url>/models` (OpenAI protocols only), reading at most 4 MiB; a
listed id or name that echoes the request's key is not kept (`wire.metadata.carries_secret`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Final

import msgspec

from ...errors import ErrorCode, LlmError
from ...vocab import DiscoveredModel, ModelDiscoveryRequest
from ...wire.attribution import attribution_headers
from ...wire.credentials import assert_usable_api_key, credential_values
from ...wire.h1transport import default_transport
from ...wire.http import transport_reason
from ...wire.metadata import carries_secret
from ...wire.proxy import ProxyError
from ...wire.settings import DEFAULT_SETTINGS
from ...wire.transport import Request, TooLarge, Transport
from .catalog import load_catalog
from .config import ResolvedProfile
from .credentials import PKG, resolve_route_key

__all__ = ["DISCOVERY_TIMEOUT_S", "MAX_DISCOVERY_BYTES", "discover_models"]

MAX_DISCOVERY_BYTES: Final = 4_194_304
"""The ceiling on the bytes of a `/models` answer (declared or actually read)."""
DISCOVERY_TIMEOUT_S: Final = 30.0
"""The overall time budget of one discovery request."""
_LISTABLE: Final = ("openai-completions", "openai-responses")


def _failed(message: str) -> LlmError:
    return LlmError(message, ErrorCode.DISCOVERY_FAILED)


def _key(
    request: ModelDiscoveryRequest, profiles: Mapping[str, ResolvedProfile], env: Mapping[str, str]
) -> str | None:
    if request.api_key is not None:
        return assert_usable_api_key(request.api_key, PKG, "the discovery api_key")
    profile = profiles.get(request.provider or "")
    if profile is None or profile.api_key_env is None:
        return None
    return resolve_route_key(profile, env)


def _positive(row: Mapping[str, object], *keys: str) -> int | None:
    for key in keys:
        value = row.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    return None


def _rows(data: list[object], secrets: tuple[str, ...]) -> list[DiscoveredModel]:
    out = []
    seen: set[str] = set()
    for row in data:
        if not isinstance(row, dict):
            continue
        mid = row.get("id")
        if not isinstance(mid, str) or not mid or mid in seen or carries_secret(mid, secrets):
            continue  # unusable row, a duplicate id (the first one wins), or an echoed key
        seen.add(mid)
        name = next(
            (v for v in (row.get("name"), row.get("display_name")) if isinstance(v, str) and v),
            None,
        )
        if name is not None and carries_secret(name, secrets):
            name = None
        out.append(
            DiscoveredModel(
                id=mid,
                name=name,
                context_window=_positive(row, "context_window", "context_length"),
                max_tokens=_positive(row, "max_output_tokens", "max_tokens"),
            )
        )
    return out


async def discover_models(
    request: ModelDiscoveryRequest,
    *,
    profiles: Mapping[str, ResolvedProfile],
    env: Mapping[str, str],
    transport: Transport | None = None,
) -> list[DiscoveredModel]:
    """Answer a discovery request (through the route's transport settings when `request.provider`
    names a profile) (`DISCOVERY_FAILED`, `DISCOVERY_UNSUPPORTED`,
    `INVALID_CREDENTIAL`, `MISSING_CREDENTIAL`); caller cancellation propagates."""
    catalog = load_catalog().providers.get(request.provider or "")
    if catalog is not None and catalog.models:
        return [
            DiscoveredModel(
                id=m.id, name=m.name, context_window=m.context_window, max_tokens=m.max_tokens
            )
            for m in catalog.models
        ]
    if not request.base_url:
        raise _failed(
            f'the installed catalog ships no models for provider "{request.provider or ""}"; set '
            "a base_url to ask the endpoint, or enter the models by hand"
        )
    api = request.api or "openai-completions"
    if api not in _LISTABLE:
        raise LlmError(
            f'model discovery is not supported for api "{api}"; enter the models by hand',
            ErrorCode.DISCOVERY_UNSUPPORTED,
        )
    key = _key(request, profiles, env)
    url = request.base_url.rstrip("/") + "/models"
    headers = {"Accept": "application/json", **attribution_headers()}
    if key is not None:
        headers["Authorization"] = f"Bearer {key}"
    profile = profiles.get(request.provider or "")
    settings = profile.transport_settings if profile is not None else DEFAULT_SETTINGS
    sent = Request("GET", url, headers=headers, settings=settings)
    try:
        async with asyncio.timeout(DISCOVERY_TIMEOUT_S):
            response = await (transport or default_transport()).send(sent)
            try:
                if not 200 <= response.status < 300:
                    hint = "; check the API key" if response.status in (401, 403) else ""
                    raise _failed(f"{url} answered {response.status}{hint}")
                declared = response.headers.get("Content-Length", "")
                if declared.isdigit() and int(declared) > MAX_DISCOVERY_BYTES:
                    raise _failed(f"{url} answered with more than {MAX_DISCOVERY_BYTES} bytes")
                body = await response.read(MAX_DISCOVERY_BYTES)
            finally:
                await response.aclose()
    except TooLarge as exc:
        raise _failed(f"{url} answered with more than {MAX_DISCOVERY_BYTES} bytes") from exc
    except (OSError, TimeoutError) as exc:
        reason = transport_reason(exc) if isinstance(exc, OSError) else "timed out"
        code = ErrorCode.PROXY if isinstance(exc, ProxyError) else ErrorCode.DISCOVERY_FAILED
        raise LlmError(f"could not reach {url}: {reason}", code, cause=exc) from exc
    try:
        document: object = msgspec.json.decode(body)
    except msgspec.DecodeError as exc:
        raise _failed(f"{url} did not answer with JSON") from exc
    data = document.get("data") if isinstance(document, dict) else None
    if not isinstance(data, list):
        raise _failed(f'{url} answered without a "data" array of models; enter the models by hand')
    return _rows(data, credential_values(headers))
