"""What keeps the inspector a local, read-only, script-safe page.

- Only GET and HEAD routes exist (aiohttp answers 405 to anything else): nothing can write.
- The server answers only requests whose `Host` it knows (else 421): a loopback name
  (`127.0.0.1`, `localhost`, `[::1]`) or one of the `allowed_hosts` (`--allowed-host NAME`, for
  the names a remote deployment is reached by), so a web page elsewhere cannot use DNS rebinding
  to read the log through a user's browser (it would arrive under its own name). A server bound
  beyond loopback (`allow_remote`) also answers an IP-address `Host`: a browser sends one only
  to a page loaded from that very address, which no rebinding can produce. No flag turns the
  check off.
- Every response carries a Content-Security-Policy allowing only the page's own files — no inline
  script, no event-handler attributes, no remote images — so even text that somehow became
  markup could not run. The page itself builds the DOM from text nodes only.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Awaitable, Callable, Iterable
from typing import Final

from aiohttp import web
from aiohttp.typedefs import Middleware

from ..errors import ErrorCode, HarnessError

__all__ = [
    "CSP",
    "SECURITY_HEADERS",
    "allowed_host_name",
    "host_guard",
    "is_loopback_host",
    "set_security_headers",
]

CSP: Final = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; font-src 'self'; base-uri 'none'; form-action 'none'; "
    "frame-ancestors 'none'"
)

SECURITY_HEADERS: Final = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
    "Cross-Origin-Resource-Policy": "same-origin",
    "Cross-Origin-Opener-Policy": "same-origin",
}


def _host_name(host: str) -> str:
    """The name of a `Host` value: no port, no brackets, no trailing dot, lower case."""
    name = host.strip()
    if name.startswith("["):
        name = name[1 : name.find("]")] if "]" in name else name[1:]
    elif name.count(":") == 1:
        name = name.split(":", 1)[0]
    return name.rstrip(".").lower()


def _is_address(name: str) -> bool:
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


def is_loopback_host(host: str) -> bool:
    """True for a loopback host name or address, with or without a port (`[::1]:8765`)."""
    name = _host_name(host)
    if name == "localhost" or name.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


_NAME: Final = re.compile(r"[a-z0-9_](?:[a-z0-9_.-]{0,251}[a-z0-9_])?")


def allowed_host_name(value: str) -> str:
    """`value` (a host name or address, as `--allowed-host` takes it) in the form `Host`
    headers are compared in; `HarnessError` `INVALID_ARGS` for anything else (a port, a path,
    a wildcard, spaces)."""
    name = value.strip().rstrip(".").lower()
    if name.startswith("[") and name.endswith("]"):
        name = name[1:-1]
    if not (_is_address(name) or (name.isascii() and _NAME.fullmatch(name))):
        raise HarnessError(
            f"allowed host {value!r} is not a host name or address (no port, path or wildcard)",
            ErrorCode.INVALID_ARGS,
        )
    return name


Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def host_guard(*, allowed_hosts: Iterable[str] = (), address_hosts: bool = False) -> Middleware:
    """The middleware refusing requests addressed to a `Host` it does not know (see the module
    docstring): loopback names, `allowed_hosts` and, with `address_hosts`, IP addresses."""
    allowed = frozenset(allowed_host_name(name) for name in allowed_hosts)

    @web.middleware
    async def guard(request: web.Request, handler: Handler) -> web.StreamResponse:
        host = request.host
        name = _host_name(host)
        if not (is_loopback_host(host) or name in allowed or (address_hosts and _is_address(name))):
            return web.Response(
                status=421,
                text="modelwire ui answers only requests addressed to 127.0.0.1, localhost or "
                "a name given with --allowed-host\n",
            )
        return await handler(request)

    return guard


async def set_security_headers(request: web.Request, response: web.StreamResponse) -> None:
    """`on_response_prepare` hook: the security headers on every response, streams included."""
    for name, value in SECURITY_HEADERS.items():
        response.headers.setdefault(name, value)
    if request.path.startswith("/api/"):
        response.headers.setdefault("Cache-Control", "no-store")
