"""A route's transport settings (DESIGN §9): proxy, TLS files, pool limits, connect timeout.

`TransportSettings` is one frozen value per route (`[providers.X]`, `[deepseek]`, the DeepSeek
adapter's keyword arguments); `transport_settings(raw, where)` validates the fields of a config
mapping at load time and raises `ValueError` whose text names the field
(``providers.x.proxy must ...``), which each config loader turns into its `INVALID_CONFIG`.

Validation is done once, at load: a proxy URL must be ``http://[user:password@]host[:port]`` (or
``"none"``: never a proxy, whatever the environment says); `ca_file` must exist and hold PEM
certificates; `client_cert`/`client_key` must load as a matching pair. The proxy's password is a
secret: the settings' repr shows the proxy without it (`wire.proxy.proxy_secrets` lists it for
the redaction of error texts).
"""

from __future__ import annotations

import math
import re
import ssl
from collections.abc import Mapping
from typing import Final
from urllib.parse import urlsplit

import msgspec

__all__ = [
    "DEFAULT_CONNECT_TIMEOUT_MS",
    "DEFAULT_KEEPALIVE_S",
    "DEFAULT_MAX_CONNECTIONS",
    "DEFAULT_SETTINGS",
    "SETTING_FIELDS",
    "TransportSettings",
    "proxy_problem",
    "redacted_proxy",
    "transport_settings",
]

DEFAULT_MAX_CONNECTIONS: Final = 100
"""Connections per host (as aiohttp and httpx); further requests queue for one."""
DEFAULT_KEEPALIVE_S: Final = 15.0
"""An idle keep-alive connection older than this is closed (the aiohttp path's 15 s)."""
DEFAULT_CONNECT_TIMEOUT_MS: Final = 30_000
"""DNS, TCP, the proxy's CONNECT and TLS together (aiohttp's 30 s)."""
_MAX_TIMER_MS: Final = 2_147_483_647
_CONTROL: Final = re.compile(r"[\x00-\x20\x7f-\x9f]")

SETTING_FIELDS: Final = (
    "proxy",
    "ca_file",
    "client_cert",
    "client_key",
    "max_connections",
    "keepalive_s",
    "connect_timeout_ms",
)
"""The config keys `transport_settings` reads (each loader adds them to its known fields)."""


class TransportSettings(msgspec.Struct, frozen=True, kw_only=True):
    """How one route reaches its endpoint. `proxy` None: from the environment; ``"none"``:
    never. Its repr hides the proxy's password."""

    proxy: str | None = None
    ca_file: str | None = None
    client_cert: str | None = None
    client_key: str | None = None
    max_connections: int = DEFAULT_MAX_CONNECTIONS
    keepalive_s: float = DEFAULT_KEEPALIVE_S
    connect_timeout_ms: int = DEFAULT_CONNECT_TIMEOUT_MS

    def __repr__(self) -> str:
        shown = None if self.proxy is None else redacted_proxy(self.proxy)
        return (
            f"TransportSettings(proxy={shown!r}, ca_file={self.ca_file!r}, "
            f"client_cert={self.client_cert!r}, client_key={self.client_key!r}, "
            f"max_connections={self.max_connections}, keepalive_s={self.keepalive_s}, "
            f"connect_timeout_ms={self.connect_timeout_ms})"
        )


DEFAULT_SETTINGS: Final = TransportSettings()


def redacted_proxy(url: str) -> str:
    """`url` with any password replaced by ``***`` (for error texts and reprs)."""
    try:
        parts = urlsplit(url)
        if parts.password is None:
            return url
        netloc = parts.netloc.rsplit("@", 1)[1]
        user = parts.username or ""
        return parts._replace(netloc=f"{user}:***@{netloc}").geturl()
    except ValueError:
        return "<an unparsable proxy URL>"


def proxy_problem(url: str) -> str | None:
    """Why `url` cannot serve as a proxy URL, or None when it can (``http://`` with a host)."""
    if (control := _CONTROL.search(url)) is not None:
        return f"must not contain control characters or spaces (U+{ord(control.group()):04X})"
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - a bad port raises here
    except ValueError as exc:
        return f"is not a valid URL ({exc})"
    if parts.scheme != "http":
        return 'must be an http:// URL (http://[user:password@]host:port) or "none"'
    if not parts.hostname:
        return "has no host"
    if parts.path not in ("", "/") or parts.query or parts.fragment:
        return "must not carry a path, query or fragment"
    return None


def _path(raw: Mapping[str, object], key: str, where: str) -> str | None:
    value = raw.get(key)
    if value is None:
        return None
    if not isinstance(value, str) or not value:
        raise ValueError(f"{where}.{key} must be a file path")
    return value


def _check_tls_files(ca_file: str | None, cert: str | None, key: str | None, where: str) -> None:
    if ca_file is not None:
        try:
            ssl.create_default_context(cafile=ca_file)
        except FileNotFoundError:
            raise ValueError(f"{where}.ca_file: no such file: {ca_file}") from None
        except (ssl.SSLError, OSError, ValueError):
            raise ValueError(f"{where}.ca_file: {ca_file} holds no PEM certificate") from None
    if key is not None and cert is None:
        raise ValueError(f"{where}.client_key is set without client_cert")
    if cert is not None:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        for field, path in (("client_cert", cert), ("client_key", key)):
            if path is not None and not _readable(path):
                raise ValueError(f"{where}.{field}: no such file: {path}")
        try:
            context.load_cert_chain(cert, key)
        except ssl.SSLError as exc:
            mismatch = "KEY_VALUES_MISMATCH" in str(exc) or "key values mismatch" in str(exc)
            field = "client_key" if mismatch or key is not None else "client_cert"
            text = (
                "does not match the client certificate"
                if mismatch
                else "is not a PEM certificate with its private key"
            )
            raise ValueError(f"{where}.{field}: {text}") from None


def _readable(path: str) -> bool:
    try:
        with open(path, "rb"):
            return True
    except OSError:
        return False


def _number(raw: Mapping[str, object], key: str, where: str, default: float) -> float:
    value = raw.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ValueError(f"{where}.{key} must be a finite number")
    return float(value)


def transport_settings(raw: Mapping[str, object], where: str) -> TransportSettings:
    """The `SETTING_FIELDS` of a config mapping, validated (a bad one raises `ValueError` naming
    ``<where>.<field>``); absent fields take their defaults."""
    proxy = raw.get("proxy")
    if proxy is not None:
        if not isinstance(proxy, str):
            raise ValueError(f"{where}.proxy must be a string")
        if proxy != "none" and (problem := proxy_problem(proxy)) is not None:
            raise ValueError(f"{where}.proxy {problem} (got {redacted_proxy(proxy)!r})")
    ca_file = _path(raw, "ca_file", where)
    cert = _path(raw, "client_cert", where)
    key = _path(raw, "client_key", where)
    _check_tls_files(ca_file, cert, key, where)
    most = raw.get("max_connections", DEFAULT_MAX_CONNECTIONS)
    if isinstance(most, bool) or not isinstance(most, int) or most < 1:
        raise ValueError(f"{where}.max_connections must be a positive integer")
    keepalive = _number(raw, "keepalive_s", where, DEFAULT_KEEPALIVE_S)
    if keepalive < 0:
        raise ValueError(f"{where}.keepalive_s must be a non-negative number of seconds")
    connect = raw.get("connect_timeout_ms", DEFAULT_CONNECT_TIMEOUT_MS)
    if (
        isinstance(connect, bool)
        or not isinstance(connect, int)
        or not 0 < connect <= _MAX_TIMER_MS
    ):
        raise ValueError(f"{where}.connect_timeout_ms must be a positive integer of ms")
    return TransportSettings(
        proxy=proxy,
        ca_file=ca_file,
        client_cert=cert,
        client_key=key,
        max_connections=most,
        keepalive_s=keepalive,
        connect_timeout_ms=connect,
    )
