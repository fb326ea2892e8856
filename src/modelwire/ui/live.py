"""`GET /api/live?id=&from_seq=`: a session's updates as server-sent events, tailed from the log.

The stream polls the log (through the shared `LogIndex`, which reads only what was appended
since) every `poll_interval` seconds — the same on every backend, SQLite and PostgreSQL alike,
and across processes: the agent writing the session need not be this process. Each change is one
`update` event whose data is a partial `SessionView` (the turns changed since the client's seq and
the new transcript entries) and whose `id` is the next seq, so a reconnecting `EventSource`
resumes where it stopped (`Last-Event-ID`). A `: keep-alive` comment every `HEARTBEAT` seconds
keeps proxies from closing an idle stream and finds a vanished client. The stream ends when the
client goes, the session disappears (`gone`) or the server shuts down.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from typing import Final

import msgspec
from aiohttp import web

from ..errors import ErrorCode, HarnessError
from .keys import INDEX, POLL_INTERVAL, STOPPING
from .params import ascii_int, int_param, session_param
from .view import session_view

__all__ = ["HEARTBEAT", "live"]

HEARTBEAT: Final = 15.0
"""Seconds of silence after which a keep-alive comment is sent."""

_ENCODER: Final = msgspec.json.Encoder()


def _since(request: web.Request) -> int:
    resumed = request.headers.get("Last-Event-ID")
    if resumed:  # the `id` this stream sent: ASCII digits, else the client is wrong (a 400)
        return ascii_int(resumed.strip(), "the Last-Event-ID header")
    return int_param(request, "from_seq", 0)


def _gone(request: web.Request) -> bool:
    transport = request.transport
    return transport is None or transport.is_closing()


async def live(request: web.Request) -> web.StreamResponse:
    """The live stream of one session (see the module docstring)."""
    sid = session_param(request)
    since = _since(request)
    index, stopping = request.app[INDEX], request.app[STOPPING]
    poll = request.app[POLL_INTERVAL]
    fold = await index.fold(sid)  # an unknown session is a 404 before the stream starts
    response = web.StreamResponse(
        headers={
            "Content-Type": "text/event-stream; charset=utf-8",
            "Cache-Control": "no-store",
            "X-Accel-Buffering": "no",
        }
    )
    quiet_since = time.monotonic()
    try:
        await response.prepare(request)
        await response.write(b"retry: 1000\n\n")
        while not stopping.is_set() and not _gone(request):
            if fold.next_seq > since:
                body = _ENCODER.encode(session_view(fold, since))
                since = fold.next_seq
                await response.write(b"id: %d\nevent: update\ndata: %s\n\n" % (since, body))
                quiet_since = time.monotonic()
            elif time.monotonic() - quiet_since >= HEARTBEAT:
                await response.write(b": keep-alive\n\n")
                quiet_since = time.monotonic()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stopping.wait(), poll)
            try:
                fold = await index.fold(sid)
            except HarnessError as err:
                if err.code != ErrorCode.SESSION_NOT_FOUND:
                    raise
                await response.write(b"event: gone\ndata: {}\n\n")
                break
    except (ConnectionError, HarnessError):
        pass  # the client left, or the log failed: the EventSource reconnects and gets the error
    return response
