"""`create_app(log)`: the inspector's aiohttp application — pages, static files, JSON, live.

Routes (GET and HEAD only; the log is never written):

| path | what |
|---|---|
| `/` | the sessions list (page) |
| `/session?id=ID` | one session: transcript, timeline, usage (page) |
| `/static/NAME` | the page's CSS and JavaScript, shipped in the package |
| `/api/sessions?q=&sort=&order=&offset=&limit=` | a page of the list (`SessionsPage`) |
| `/api/session?id=` | the session view (`SessionView`) |
| `/api/attempt?id=&turn=&step=&attempt=` | an attempt's request facts (`AttemptDetail`) |
| `/api/chunks?id=&turn=&step=&attempt=&from_seq=&limit=` | its raw chunks (`ChunkPage`) |
| `/api/events?id=&from_seq=&limit=` | the raw events (`EventPage`) |
| `/api/live?id=&from_seq=` | server-sent `update` events as the session grows |

Session ids travel as a query parameter, so any id the log accepts (slashes, spaces, `#`) works.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable
from typing import Final

import msgspec
from aiohttp import web

from ..errors import ErrorCode, HarnessError
from ..session import SessionLog
from .assets import load_assets
from .guard import host_guard, set_security_headers
from .handlers import attempt, chunks, events, json_response, session, sessions
from .index import LogIndex
from .keys import ASSETS, INDEX, LOG_NAME, POLL_INTERVAL, STOPPING
from .live import live

__all__ = ["DEFAULT_POLL_INTERVAL", "create_app"]

DEFAULT_POLL_INTERVAL: Final = 0.25
"""Seconds between two reads of the log by a live stream."""

_STATUS: Final[dict[str, int]] = {
    ErrorCode.SESSION_NOT_FOUND: 404,
    ErrorCode.INVALID_ARGS: 400,
    ErrorCode.INVALID_SESSION_ID: 400,
    ErrorCode.LOG_UNAVAILABLE: 503,
}

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


class ErrorBody(msgspec.Struct, frozen=True):
    """What failed: the stable code and a message (never a credential)."""

    code: str
    message: str


class ErrorPayload(msgspec.Struct, frozen=True):
    """The body of every failed JSON request."""

    error: ErrorBody


@web.middleware
async def _errors(request: web.Request, handler: Handler) -> web.StreamResponse:
    try:
        return await handler(request)
    except HarnessError as err:
        status = _STATUS.get(err.code, 500)
        return json_response(ErrorPayload(ErrorBody(err.code, str(err))), status=status)


def _page(name: str) -> Handler:
    async def handler(request: web.Request) -> web.StreamResponse:
        asset = request.app[ASSETS][name]
        return web.Response(body=asset.body, content_type="text/html", charset="utf-8")

    return handler


async def _static(request: web.Request) -> web.StreamResponse:
    asset = request.app[ASSETS].get(request.match_info["name"])
    if asset is None:
        raise web.HTTPNotFound(text="no such file\n")
    return web.Response(
        body=asset.body,
        headers={"Content-Type": asset.content_type, "Cache-Control": "no-cache"},
    )


def create_app(
    log: SessionLog,
    *,
    poll_interval: float = DEFAULT_POLL_INTERVAL,
    allowed_hosts: Iterable[str] = (),
    address_hosts: bool = False,
    max_views: int = 16,
) -> web.Application:
    """The read-only inspector of `log` (which the caller opens and closes).

    `poll_interval` is how often a live stream reads the log; the `Host` check always runs:
    `allowed_hosts` are names answered besides the loopback ones, `address_hosts` also answers
    IP-address hosts (a server bound beyond 127.0.0.1; see `guard`); `max_views` is how many
    session views stay cached.
    """
    if not poll_interval > 0:
        raise HarnessError(
            f"poll_interval must be > 0 seconds, got {poll_interval!r}", ErrorCode.INVALID_ARGS
        )
    app = web.Application(
        middlewares=[host_guard(allowed_hosts=allowed_hosts, address_hosts=address_hosts), _errors]
    )
    app[INDEX] = LogIndex(log, max_views=max_views)
    app[LOG_NAME] = log.describe()
    app[ASSETS] = load_assets()
    app[POLL_INTERVAL] = float(poll_interval)
    app[STOPPING] = asyncio.Event()

    async def stop_streams(app: web.Application) -> None:
        app[STOPPING].set()

    async def stop_summaries(app: web.Application) -> None:
        await app[INDEX].close()

    app.on_shutdown.append(stop_streams)
    app.on_cleanup.append(stop_summaries)
    app.on_response_prepare.append(set_security_headers)
    router = app.router
    router.add_get("/", _page("index.html"))
    router.add_get("/session", _page("session.html"))
    router.add_get("/static/{name}", _static)
    router.add_get("/api/sessions", sessions)
    router.add_get("/api/session", session)
    router.add_get("/api/attempt", attempt)
    router.add_get("/api/chunks", chunks)
    router.add_get("/api/events", events)
    router.add_get("/api/live", live)
    return app
