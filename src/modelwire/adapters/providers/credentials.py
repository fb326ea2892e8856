"""Per-request credential resolution for a route (spec §2) and the auth headers it produces."""

from __future__ import annotations

from collections.abc import Mapping

from ...errors import ErrorCode, LlmError
from ...wire.credentials import assert_usable_api_key
from .config import ResolvedProfile

__all__ = ["PKG", "auth_headers", "resolve_route_key"]

PKG = "modelwire.providers"
"""The package name credential errors carry."""


def resolve_route_key(profile: ResolvedProfile, env: Mapping[str, str]) -> str | None:
    """The usable key of a route, read now from `env`, or None for "no key" (ambient unset).

    A named `api_key_env` that is unset or empty raises `MISSING_CREDENTIAL` and never falls back
    to an ambient variable; a present but unusable key raises `INVALID_CREDENTIAL`. Messages name
    the route and the reference, never the key.
    """
    ref = profile.api_key_env
    if ref is not None:
        raw = env.get(ref)
        if not raw:
            raise LlmError(
                f'{PKG}: provider route "{profile.route}" names the credential {ref}, which is '
                f"not set; store or export {ref}, or remove api_key_env to use ambient discovery",
                ErrorCode.MISSING_CREDENTIAL,
            )
        return assert_usable_api_key(raw, PKG, ref)
    for name in profile.ambient_key_env:
        raw = env.get(name)
        if raw:
            return assert_usable_api_key(raw, PKG, name)
    return None


def _has_header(headers: Mapping[str, str], *names: str) -> bool:
    return any(k.lower() in names and v.strip() for k, v in headers.items())


def auth_headers(profile: ResolvedProfile, api: str, key: str | None) -> dict[str, str]:
    """The auth header for `api` (`x-api-key` for Anthropic, else a Bearer token).

    Without a key, the profile's own `Authorization` (or `cf-aig-authorization`, or for Anthropic
    `x-api-key`) header must carry the credential, else `MISSING_CREDENTIAL`
    "No API key for provider: <route>" before any I/O.
    """
    if key is not None:
        if api == "anthropic-messages":
            return {"x-api-key": key}
        return {"Authorization": f"Bearer {key}"}
    allowed: tuple[str, ...] = ("authorization", "cf-aig-authorization")
    if api == "anthropic-messages":
        allowed = (*allowed, "x-api-key")
    if _has_header(dict(profile.headers), *allowed):
        return {}
    raise LlmError(f"No API key for provider: {profile.route}", ErrorCode.MISSING_CREDENTIAL)
