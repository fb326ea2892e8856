"""Model discovery: which models can a draft endpoint serve? (spec §6). Stores nothing.

Catalog providers are answered from the installed catalog without network or credentials; other
endpoints are asked `GET <base_url>/models` (OpenAI protocols only), reading at most 4 MiB.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

import aiohttp
import msgspec

from ...errors import ErrorCode, LlmError
from ...vocab import DiscoveredModel, ModelDiscoveryRequest
from ...wire.attribution import attribution_headers
from ...wire.credentials import assert_usable_api_key
from ...wire.http import get_session
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


def _rows(data: list[object]) -> list[DiscoveredModel]:
    out = []
    seen: set[str] = set()
    for row in data:
        if not isinstance(row, dict):
            continue
        mid = row.get("id")
        if not isinstance(mid, str) or not mid or mid in seen:
            continue  # unusable row, or a duplicate id (the first one wins)
        seen.add(mid)
        name = next(
            (v for v in (row.get("name"), row.get("display_name")) if isinstance(v, str) and v),
            None,
        )
        out.append(
            DiscoveredModel(
                id=mid,
                name=name,
                context_window=_positive(row, "context_window", "context_length"),
                max_tokens=_positive(row, "max_output_tokens", "max_tokens"),
            )
        )
    return out


async def _read_capped(response: aiohttp.ClientResponse, url: str) -> bytes:
    declared = response.content_length
    if declared is not None and declared > MAX_DISCOVERY_BYTES:
        raise _failed(f"{url} answered with more than {MAX_DISCOVERY_BYTES} bytes")
    parts: list[bytes] = []
    total = 0
    while True:
        data = await response.content.readany()
        if not data:
            return b"".join(parts)
        total += len(data)
        if total > MAX_DISCOVERY_BYTES:
            raise _failed(f"{url} answered with more than {MAX_DISCOVERY_BYTES} bytes")
        parts.append(data)


async def discover_models(
    request: ModelDiscoveryRequest,
    *,
    profiles: Mapping[str, ResolvedProfile],
    env: Mapping[str, str],
) -> list[DiscoveredModel]:
    """Answer a discovery request (`DISCOVERY_FAILED`, `DISCOVERY_UNSUPPORTED`,
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
    try:
        async with get_session().get(
            url, headers=headers, timeout=aiohttp.ClientTimeout(total=DISCOVERY_TIMEOUT_S)
        ) as response:
            if not 200 <= response.status < 300:
                hint = "; check the API key" if response.status in (401, 403) else ""
                raise _failed(f"{url} answered {response.status}{hint}")
            body = await _read_capped(response, url)
    except (aiohttp.ClientError, OSError, TimeoutError) as exc:
        raise LlmError(f"could not reach {url}", ErrorCode.DISCOVERY_FAILED, cause=exc) from exc
    try:
        document: object = msgspec.json.decode(body)
    except msgspec.DecodeError as exc:
        raise _failed(f"{url} did not answer with JSON") from exc
    data = document.get("data") if isinstance(document, dict) else None
    if not isinstance(data, list):
        raise _failed(f'{url} answered without a "data" array of models; enter the models by hand')
    return _rows(data)
