"""Per-request credential resolution for a route (spec §2) and the auth headers it produces."""

from __future__ import annotations

from collections.abc import Mapping

from ...errors import ErrorCode, LlmError
from ...wire.credentials import assert_usable_api_key
from .config import ResolvedProfile
from .protocols.spec import WireProtocol

__all__ = ["PKG", "auth_headers", "missing_credential", "missing_key_message", "resolve_route_key"]

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


def _has_header(headers: Mapping[str, str], names: tuple[str, ...]) -> bool:
    return any(k.lower() in names and v.strip() for k, v in headers.items())


def missing_key_message(profile: ResolvedProfile) -> str:
    """``No API key for provider: <route>``, naming the catalog's key variable when it has one."""
    text = f"No API key for provider: {profile.route}"
    if profile.ambient_key_env:
        text += f" (set {' or '.join(profile.ambient_key_env)}, or name one with api_key_env)"
    return text


def auth_headers(profile: ResolvedProfile, spec: WireProtocol, key: str | None) -> dict[str, str]:
    """The auth header of a key on `spec`'s wire (Bearer, ``x-api-key``, ``x-goog-api-key``,
    ``api-key`` ...); nothing on a keyless route (`auth = "none"`).

    Without a key, the profile's own credential header (one of the protocol's
    `key_header_names`) must carry it, or the protocol signs requests itself (`authorize`);
    else `MISSING_CREDENTIAL` before any I/O.
    """
    if profile.auth == "none":
        return {}
    if key is not None:
        return spec.key_headers(key)
    if _has_header(dict(profile.headers), spec.key_header_names) or spec.signs:
        return {}
    raise LlmError(missing_key_message(profile), ErrorCode.MISSING_CREDENTIAL)


def missing_credential(
    profile: ResolvedProfile, spec: WireProtocol, env: Mapping[str, str]
) -> str | None:
    """What the route still needs before a call can authenticate (a variable name to set), or
    None when it is ready: keyless, its key variable set, a credential header configured, or
    (for a signing protocol) ambient credentials present. Reads `env` only; never a value."""
    if profile.auth == "none":
        return None
    if profile.api_key_env is not None:
        return None if env.get(profile.api_key_env, "").strip() else profile.api_key_env
    if any(env.get(name, "").strip() for name in profile.ambient_key_env):
        return None
    if _has_header(dict(profile.headers), spec.key_header_names):
        return None
    if spec.signs:
        ready = spec.ambient_ready
        if (
            ready(env)
            if ready is not None
            else any(env.get(n, "").strip() for n in spec.ambient_env)
        ):
            return None
        names = dict.fromkeys((*profile.ambient_key_env, *spec.ambient_env))
        return " or ".join(names) or "credentials"
    return profile.ambient_key_env[0] if profile.ambient_key_env else "api_key_env"
