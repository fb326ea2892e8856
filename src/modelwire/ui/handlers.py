"""The JSON endpoints: the sessions list, one session, one attempt, its raw chunks, raw events.

Every payload is a frozen msgspec struct (`payloads.py`) encoded as JSON; every parameter is
checked (`params.py`) and a failure becomes `{"error": {"code", "message"}}` (see `app.py`).
"""

from __future__ import annotations

from typing import Final, Literal, cast

import msgspec
from aiohttp import web

from ..errors import ErrorCode, HarnessError
from ..session import AssistantChunk
from .costs import call_costs
from .keys import INDEX, LOG_NAME
from .listing import MAX_LIMIT, SORTS, list_page
from .params import int_param, session_param, text_param
from .payloads import (
    AttemptDetail,
    ChunkPage,
    ChunkRow,
    ContextView,
    EventPage,
    EventRow,
    HeaderView,
)
from .reader import read_range
from .timeline import AttemptState, freeze_attempt
from .view import session_view

__all__ = [
    "FIRST_PAGE_EVENTS",
    "attempt",
    "chunks",
    "events",
    "json_response",
    "session",
    "sessions",
]

_ENCODER: Final = msgspec.json.Encoder()
_ORDERS: Final = frozenset({"asc", "desc"})
_MAX_CHUNKS: Final = 2_000
FIRST_PAGE_EVENTS: Final = 20_000
"""Events a session's first page folds before answering; the live stream sends the rest."""


def json_response(payload: object, *, status: int = 200) -> web.Response:
    """`payload` (msgspec structs and builtins) as an `application/json` response."""
    return web.Response(
        body=_ENCODER.encode(payload), status=status, content_type="application/json"
    )


async def sessions(request: web.Request) -> web.Response:
    """`GET /api/sessions?q=&sort=&order=&offset=&limit=`: one page of the sessions list."""
    page = await list_page(
        request.app[INDEX],
        log_name=request.app[LOG_NAME],
        q=text_param(request, "q", ""),
        sort=text_param(request, "sort", "last", choices=SORTS),
        order=cast(Literal["asc", "desc"], text_param(request, "order", "desc", choices=_ORDERS)),
        offset=int_param(request, "offset", 0),
        limit=int_param(request, "limit", 50, low=1, high=MAX_LIMIT),
    )
    return json_response(page)


async def session(request: web.Request) -> web.Response:
    """`GET /api/session?id=`: the session view (timeline, transcript, usage), without chunks.

    A giant session answers with the view of its first `FIRST_PAGE_EVENTS` unread events
    (`complete` false); `/api/live` from its `next_seq` brings the rest.
    """
    fold = await request.app[INDEX].fold(session_param(request), max_events=FIRST_PAGE_EVENTS)
    return json_response(session_view(fold))


async def _attempt_of(request: web.Request) -> tuple[str, AttemptState]:
    sid = session_param(request)
    key = (
        int_param(request, "turn", None, low=1),
        int_param(request, "step", None, low=1),
        int_param(request, "attempt", None, low=1),
    )
    fold = await request.app[INDEX].fold(sid)
    turn = fold.turns.get(key[0])
    step = turn.steps.get(key[1]) if turn is not None else None
    found = step.attempts.get(key[2]) if step is not None else None
    if found is None:
        raise HarnessError(
            f"session {sid!r} has no attempt {key[0]}.{key[1]}.{key[2]}",
            ErrorCode.SESSION_NOT_FOUND,
        )
    return sid, found


async def attempt(request: web.Request) -> web.Response:
    """`GET /api/attempt?id=&turn=&step=&attempt=`: the attempt and its request facts."""
    sid, found = await _attempt_of(request)
    fold = await request.app[INDEX].fold(sid)
    report = fold.meter.report()
    header = fold.headers[found.header] if found.header >= 0 else None
    context = fold.contexts[found.context] if found.context >= 0 else None
    detail = AttemptDetail(
        session_id=sid,
        attempt=freeze_attempt(
            found, report.calls.get(found.key), call_costs(report).get(found.key)
        ),
        header=HeaderView(header[0], header[1].reason, header[1].header) if header else None,
        context=ContextView(context[0], context[1]) if context else None,
        input_messages=found.input_messages,
    )
    return json_response(detail)


async def chunks(request: web.Request) -> web.Response:
    """`GET /api/chunks?id=&turn=&step=&attempt=&from_seq=&limit=`: a page of raw chunks."""
    sid, found = await _attempt_of(request)
    limit = int_param(request, "limit", 200, low=1, high=_MAX_CHUNKS)
    if found.first_seq is None or found.last_seq is None:
        return json_response(ChunkPage(total=0, items=(), next_seq=None))
    start = max(int_param(request, "from_seq", found.first_seq), found.first_seq)
    stop = min(found.last_seq + 1, start + limit)
    rows: list[ChunkRow] = []
    if start < stop:
        for event in await read_range(request.app[INDEX].log, sid, start, stop):
            data = event.data
            if (
                isinstance(data, AssistantChunk)
                and (data.turn, data.step, data.attempt) == found.key
            ):
                rows.append(ChunkRow(event.seq, event.time, data.chunk))
    following = stop if stop <= found.last_seq else None
    return json_response(ChunkPage(total=found.chunks, items=tuple(rows), next_seq=following))


async def events(request: web.Request) -> web.Response:
    """`GET /api/events?id=&from_seq=&limit=`: a page of the session's raw events, as logged."""
    sid = session_param(request)
    start = int_param(request, "from_seq", 0)
    limit = int_param(request, "limit", 500, low=1, high=_MAX_CHUNKS)
    found = await read_range(request.app[INDEX].log, sid, start, start + limit + 1)
    page = found[:limit]
    more = found[limit].seq if len(found) > limit else None
    return json_response(
        EventPage(
            session_id=sid,
            items=tuple(EventRow(e.seq, e.type, e.time, e.data) for e in page),
            next_seq=more,
        )
    )
