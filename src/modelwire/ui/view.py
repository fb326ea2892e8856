"""`session_view(fold, since)`: the `SessionView` payload of a `SessionFold`.

All of it (`since` None), or for a live update only what changed at or after seq `since`: the
turns an event since then touched, the transcript entries logged since, and the current draft,
usage and cost (small, so always sent whole).
"""

from __future__ import annotations

import bisect

from .blocks import usage_view
from .costs import call_costs, total_cost
from .fold import SessionFold
from .payloads import CallUsage, SessionView
from .timeline import freeze_turn

__all__ = ["session_view"]


def session_view(fold: SessionFold, since: int | None = None) -> SessionView:
    """The payload of `fold` (see the module docstring)."""
    report = fold.meter.report()
    costs = call_costs(report)
    turns = [t for _, t in sorted(fold.turns.items())]
    items = fold.transcript
    if since is not None:
        turns = [t for t in turns if t.updated_seq >= since]
        items = items[bisect.bisect_left(items, since, key=lambda i: i.seq) :]
    return SessionView(
        session_id=fold.session_id,
        full=since is None,
        complete=fold.caught_up,
        next_seq=fold.next_seq,
        start=fold.start,
        end=fold.end,
        running=fold.running,
        route=fold.route,
        turns=tuple(freeze_turn(t, report.calls, costs) for t in turns),
        transcript=tuple(items),
        draft=fold.draft(),
        calls=tuple(
            CallUsage(turn=k[0], step=k[1], attempt=k[2], usage=usage_view(u), cost=costs.get(k))
            for k, u in sorted(report.calls.items())
        ),
        total=usage_view(report.total),
        cost=total_cost(report),
    )
