"""What keeps the inspector a local, read-only, script-safe page.

- Only GET and HEAD routes exist (aiohttp answers 405 to anything else): nothing can write.
- A loopback-bound server answers only requests whose `Host` is a loopback name (`127.0.0.1`,
  `localhost`, `[::1]`): a web page elsewhere cannot use DNS rebinding to read the log through
  the user's browser. `allow_remote` (an explicit flag) lifts the check.
- Every response carries a Content-Security-Policy allowing only the page's own files — no inline
  script, no event-handler attributes, no remote images — so even text that somehow became
  markup could not run. The page itself builds the DOM from text nodes only.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Awaitable, Callable
from typing import Final

from aiohttp import web
from aiohttp.typedefs import Middleware

__all__ = ["CSP", "SECURITY_HEADERS", "host_guard", "is_loopback_host", "set_security_headers"]

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


def is_loopback_host(host: str) -> bool:
    """True for a loopback host name or address, with or without a port (`[::1]:8765`)."""
    name = host.strip()
    if name.startswith("["):
        name = name[1 : name.find("]")] if "]" in name else name[1:]
    elif name.count(":") == 1:
        name = name.split(":", 1)[0]
    name = name.rstrip(".").lower()
    if name == "localhost" or name.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def host_guard(*, allow_any_host: bool) -> Middleware:
    """The middleware refusing requests addressed to a non-loopback `Host` (see the docstring)."""

    @web.middleware
    async def guard(request: web.Request, handler: Handler) -> web.StreamResponse:
        if not allow_any_host and not is_loopback_host(request.host):
            return web.Response(
                status=421,
                text="modelwire ui answers only requests addressed to 127.0.0.1 or localhost\n",
            )
        return await handler(request)

    return guard


async def set_security_headers(request: web.Request, response: web.StreamResponse) -> None:
    """`on_response_prepare` hook: the security headers on every response, streams included."""
    for name, value in SECURITY_HEADERS.items():
        response.headers.setdefault(name, value)
    if request.path.startswith("/api/"):
        response.headers.setdefault("Cache-Control", "no-store")
