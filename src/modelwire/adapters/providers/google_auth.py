"""Google Cloud authentication for Vertex AI routes: an access token for each request.

Resolution, first match wins, read from the launch environment the adapter was given (never
`os.environ` behind its back):

1. the route's key (`api_key_env`), an OAuth access token, sent as ``Authorization: Bearer``
   (the protocol's `key_headers`; this module is not asked);
2. ``GOOGLE_OAUTH_ACCESS_TOKEN``, an access token minted elsewhere (``gcloud auth
   print-access-token``);
3. the credentials file ``GOOGLE_APPLICATION_CREDENTIALS`` names, else Application Default
   Credentials at ``$CLOUDSDK_CONFIG/application_default_credentials.json`` (default
   ``~/.config/gcloud``, ``~`` from the environment's ``HOME``): a ``service_account`` key (a JWT
   signed RS256 with its private key, exchanged at its ``token_uri``; the signature needs the
   optional ``cryptography`` package, extra ``[vertex]``) or an ``authorized_user`` (its refresh
   token exchanged at ``token_uri``, default ``https://oauth2.googleapis.com/token``).

A minted token is cached per credentials file until a minute before it expires (by the call's
injected clock); concurrent calls share one exchange. The exchange is a form POST through the
shared transport. Failures name the route and the file or variable, never a value:
``MISSING_CREDENTIAL`` (nothing found), ``INVALID_CREDENTIAL`` (an unreadable or incomplete
file, a key that does not load), ``INVALID_CONFIG`` (``cryptography`` missing), ``AUTH`` (the
token endpoint refused), ``TRANSPORT`` / ``TIMEOUT`` (it could not be reached).
"""

from __future__ import annotations

import asyncio
import base64
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Final, NamedTuple
from urllib.parse import urlencode

import msgspec

from ...errors import ErrorCode, LlmError
from ...wire.http import stream_post
from ...wire.watchdog import IdleWatchdog
from .protocols.request import BuiltRequest
from .protocols.spec import AuthContext

__all__ = [
    "SCOPE",
    "TOKEN_ENV",
    "authorize_google",
    "credentials_project",
    "google_ambient_ready",
]

TOKEN_ENV: Final = "GOOGLE_OAUTH_ACCESS_TOKEN"
SCOPE: Final = "https://www.googleapis.com/auth/cloud-platform"
_DEFAULT_TOKEN_URI: Final = "https://oauth2.googleapis.com/token"
_JWT_BEARER: Final = "urn:ietf:params:oauth:grant-type:jwt-bearer"
_MARGIN_S: Final = 60.0
_EXCHANGE_MS: Final = 30_000.0


class _File(msgspec.Struct, kw_only=True):
    type: str = ""
    project_id: str | None = None
    quota_project_id: str | None = None
    client_email: str | None = None
    private_key: str | None = None
    private_key_id: str | None = None
    client_id: str | None = None
    client_secret: str | None = None
    refresh_token: str | None = None
    token_uri: str | None = None


class _Token(msgspec.Struct):
    access_token: str = ""
    expires_in: float = 3600.0


class _Cached(NamedTuple):
    token: str
    expires_at: float


_cache: dict[str, _Cached] = {}
_locks: dict[str, asyncio.Lock] = {}


def _get(env: Mapping[str, str], name: str) -> str | None:
    value = env.get(name, "").strip()
    return value or None


def _credentials_path(env: Mapping[str, str]) -> Path | None:
    """The credentials file to use: ``GOOGLE_APPLICATION_CREDENTIALS``, else the ADC file
    when it exists (None when neither)."""
    named = _get(env, "GOOGLE_APPLICATION_CREDENTIALS")
    if named is not None:
        return Path(named)
    config = _get(env, "CLOUDSDK_CONFIG")
    home = _get(env, "HOME")
    folder = Path(config) if config else (Path(home) / ".config" / "gcloud" if home else None)
    if folder is None:
        return None
    path = folder / "application_default_credentials.json"
    return path if path.is_file() else None


def _read(route: str, path: Path) -> _File:
    try:
        return msgspec.json.decode(path.read_bytes(), type=_File)
    except OSError as exc:
        raise LlmError(
            f'route "{route}": cannot read the Google credentials file {path} '
            f"({exc.strerror or type(exc).__name__})",
            ErrorCode.INVALID_CREDENTIAL,
        ) from None
    except msgspec.DecodeError:
        raise LlmError(
            f'route "{route}": the Google credentials file {path} is not a credentials JSON object',
            ErrorCode.INVALID_CREDENTIAL,
        ) from None


def credentials_project(env: Mapping[str, str]) -> str | None:
    """The project the credentials file names (a service account's ``project_id``, an
    authorized user's ``quota_project_id``), None when there is none or no file."""
    path = _credentials_path(env)
    if path is None:
        return None
    try:
        info = msgspec.json.decode(path.read_bytes(), type=_File)
    except (OSError, msgspec.DecodeError):
        return None
    return info.project_id or info.quota_project_id


def google_ambient_ready(env: Mapping[str, str]) -> bool:
    """An access token variable, or a credentials file to mint one from."""
    return _get(env, TOKEN_ENV) is not None or _credentials_path(env) is not None


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _jwt(route: str, path: Path, info: _File, audience: str, now: float) -> str:
    """The RS256-signed assertion a service account exchanges for an access token."""
    try:
        from cryptography.exceptions import UnsupportedAlgorithm
        from cryptography.hazmat.primitives import hashes, serialization
        from cryptography.hazmat.primitives.asymmetric import padding, rsa
    except ImportError:
        raise LlmError(
            f'route "{route}": a service-account key ({path}) is signed with RS256, which needs '
            'the optional dependency cryptography: pip install "modelwire[vertex]" (or use '
            f"{TOKEN_ENV} or an authorized_user ADC file)",
            ErrorCode.INVALID_CONFIG,
        ) from None
    try:
        key = serialization.load_pem_private_key((info.private_key or "").encode(), None)
    except (ValueError, TypeError, UnsupportedAlgorithm):
        raise LlmError(
            f'route "{route}": the private_key of the service account in {path} does not load '
            "as a PEM RSA key",
            ErrorCode.INVALID_CREDENTIAL,
        ) from None
    if not isinstance(key, rsa.RSAPrivateKey):
        raise LlmError(
            f'route "{route}": the service account in {path} has no RSA private key',
            ErrorCode.INVALID_CREDENTIAL,
        )
    header = {"alg": "RS256", "typ": "JWT"}
    if info.private_key_id:
        header["kid"] = info.private_key_id
    issued = int(now)
    claims = {
        "iss": info.client_email,
        "scope": SCOPE,
        "aud": audience,
        "iat": issued,
        "exp": issued + 3600,
    }
    signing = f"{_b64(json.dumps(header).encode())}.{_b64(json.dumps(claims).encode())}"
    signature = key.sign(signing.encode("ascii"), padding.PKCS1v15(), hashes.SHA256())
    return f"{signing}.{_b64(signature)}"


def _grant(route: str, path: Path, info: _File, now: float) -> tuple[str, dict[str, str]]:
    """The token endpoint and the form fields of the exchange the credentials file allows."""
    kind = info.type
    if kind == "service_account":
        uri = info.token_uri or _DEFAULT_TOKEN_URI
        if not info.client_email or not info.private_key:
            raise LlmError(
                f'route "{route}": the service account in {path} lacks client_email or private_key',
                ErrorCode.INVALID_CREDENTIAL,
            )
        return uri, {"grant_type": _JWT_BEARER, "assertion": _jwt(route, path, info, uri, now)}
    if kind == "authorized_user":
        if not (info.client_id and info.client_secret and info.refresh_token):
            raise LlmError(
                f'route "{route}": the authorized_user credentials in {path} lack client_id, '
                "client_secret or refresh_token",
                ErrorCode.INVALID_CREDENTIAL,
            )
        return info.token_uri or _DEFAULT_TOKEN_URI, {
            "grant_type": "refresh_token",
            "client_id": info.client_id,
            "client_secret": info.client_secret,
            "refresh_token": info.refresh_token,
        }
    raise LlmError(
        f'route "{route}": the Google credentials file {path} is of type {kind[:40]!r}; '
        "modelwire reads service_account and authorized_user files",
        ErrorCode.INVALID_CREDENTIAL,
    )


async def _exchange(route: str, uri: str, form: dict[str, str], ctx: AuthContext) -> _Token:
    """POST the form to the token endpoint (through the route's transport and settings: its
    proxy and TLS files); its access token and lifetime."""
    watchdog = IdleWatchdog(
        _EXCHANGE_MS, message=f"Google token endpoint {uri} did not answer within 30000ms"
    )
    secrets = tuple(v for k, v in form.items() if k != "grant_type")
    body = b""
    try:
        async for read in stream_post(
            uri,
            urlencode(form).encode("ascii"),
            {"Content-Type": "application/x-www-form-urlencoded", "Accept": "application/json"},
            provider="Google OAuth",
            endpoint=uri,
            watchdog=watchdog,
            secrets=secrets,
            settings=ctx.settings,
            transport=ctx.transport,
        ):
            body += read
    except LlmError as exc:
        if exc.code not in (ErrorCode.TRANSPORT, ErrorCode.TIMEOUT):
            raise LlmError(
                f'route "{route}": Google refused the credentials: {exc.message}',
                ErrorCode.AUTH,
                cause=exc,
            ) from exc
        raise
    finally:
        watchdog.close()
    try:
        token = msgspec.json.decode(body, type=_Token)
    except msgspec.DecodeError:
        token = _Token()
    if not token.access_token:
        raise LlmError(
            f'route "{route}": the Google token endpoint {uri} answered without an access_token',
            ErrorCode.AUTH,
        )
    return token


async def _minted(route: str, path: Path, now: float, ctx: AuthContext) -> str:
    """A cached or freshly minted access token for the credentials in `path`."""
    key = str(path)
    cached = _cache.get(key)
    if cached is not None and cached.expires_at - _MARGIN_S > now:
        return cached.token
    lock = _locks.setdefault(key, asyncio.Lock())
    async with lock:
        cached = _cache.get(key)
        if cached is not None and cached.expires_at - _MARGIN_S > now:
            return cached.token
        uri, form = _grant(route, path, _read(route, path), now)
        token = await _exchange(route, uri, form, ctx)
        _cache[key] = _Cached(token.access_token, now + token.expires_in)
        return token.access_token


async def authorize_google(
    request: BuiltRequest, headers: Mapping[str, str], ctx: AuthContext
) -> dict[str, str]:
    """The ``Authorization: Bearer`` header of one Vertex request (`spec.AsyncAuthorize`)."""
    token = _get(ctx.env, TOKEN_ENV)
    if token is None:
        path = _credentials_path(ctx.env)
        if path is None:
            raise LlmError(
                f'route "{ctx.route}": no Google credentials for Vertex AI; set api_key_env to '
                f"a variable holding an access token, or {TOKEN_ENV}, or "
                "GOOGLE_APPLICATION_CREDENTIALS to a service-account key or authorized_user "
                "file, or run `gcloud auth application-default login`",
                ErrorCode.MISSING_CREDENTIAL,
            )
        token = await _minted(ctx.route, path, ctx.now(), ctx)
    return {"Authorization": f"Bearer {token}"}
