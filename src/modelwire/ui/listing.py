"""The sessions list: search, sort and page over `LogIndex` summaries.

Sorting by id, start, last activity or event count needs only the log's own session table, so
only the rows of the requested page are summarized (a giant session among them is summarized in
the background and its row answered `pending`, so the page never waits on it). Searching, or sorting by a derived column
(route, turns, tokens, cost, outcome), summarizes every session — once: summaries are cached and
caught up incrementally, so later requests cost one pass over the rows.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from decimal import Decimal
from typing import TYPE_CHECKING, Final, Literal, TypeAlias

from ..session import SessionInfo
from .index import PAGE_BUDGET, LogIndex
from .payloads import SessionRow, SessionsPage

if TYPE_CHECKING:
    from _typeshed import SupportsRichComparison

    SortValue: TypeAlias = SupportsRichComparison
else:
    SortValue: TypeAlias = object

__all__ = ["DERIVED_SORTS", "INFO_SORTS", "MAX_LIMIT", "SORTS", "list_page"]

INFO_SORTS: Final[dict[str, Callable[[SessionInfo], str | int]]] = {
    "id": lambda i: i.session_id,
    "started": lambda i: i.first_time,
    "last": lambda i: i.last_time,
    "events": lambda i: i.events,
}
"""Sort keys answered by the log's session table alone."""

DERIVED_SORTS: Final[dict[str, Callable[[SessionRow], SortValue | None]]] = {
    "route": lambda r: r.route,
    "turns": lambda r: r.turns,
    "tokens": lambda r: r.tokens,
    "cost": lambda r: Decimal(r.cost) if r.cost is not None else None,
    "outcome": lambda r: r.outcome,
}
"""Sort keys that need every session's summary."""

SORTS: Final = frozenset(INFO_SORTS) | frozenset(DERIVED_SORTS)
MAX_LIMIT: Final = 500


def _matches(row: SessionRow, needle: str) -> bool:
    return any(
        needle in value.casefold()
        for value in (row.session_id, row.route, row.outcome, row.outcome_code)
        if value
    )


def _sorted_rows(rows: Sequence[SessionRow], sort: str, descending: bool) -> list[SessionRow]:
    """Rows by a derived column; rows without a value (no cost, no route) go last either way."""
    key = DERIVED_SORTS[sort]
    known: list[tuple[SortValue, SessionRow]] = []
    blank: list[SessionRow] = []
    for row in sorted(rows, key=lambda r: r.session_id):
        value = key(row)
        if value is None:
            blank.append(row)
        else:
            known.append((value, row))
    known.sort(key=lambda pair: pair[0], reverse=descending)
    return [row for _, row in known] + blank


async def list_page(
    index: LogIndex,
    *,
    log_name: str,
    q: str,
    sort: str,
    order: Literal["asc", "desc"],
    offset: int,
    limit: int,
) -> SessionsPage:
    """One page of the sessions list (`sort` in `SORTS`, `limit` at most `MAX_LIMIT`)."""
    infos = await index.infos()
    index.forget_missing(infos)
    descending = order == "desc"
    needle = q.strip().casefold()
    if needle or sort in DERIVED_SORTS:
        rows = await index.rows(infos)
        if needle:
            rows = [r for r in rows if _matches(r, needle)]
        if sort in DERIVED_SORTS:
            rows = _sorted_rows(rows, sort, descending)
        else:
            info_key = INFO_SORTS[sort]
            rows.sort(key=lambda r: r.session_id)
            by_id = {i.session_id: i for i in infos}
            rows.sort(key=lambda r: info_key(by_id[r.session_id]), reverse=descending)
        matched = len(rows)
        page = rows[offset : offset + limit]
    else:
        info_key = INFO_SORTS[sort]
        ordered = sorted(infos, key=lambda i: i.session_id)
        ordered.sort(key=info_key, reverse=descending)
        matched = len(ordered)
        page = await index.rows(ordered[offset : offset + limit], budget=PAGE_BUDGET)
    return SessionsPage(
        log=log_name,
        total=len(infos),
        matched=matched,
        offset=offset,
        limit=limit,
        sort=sort,
        order=order,
        q=q,
        items=tuple(page),
    )
