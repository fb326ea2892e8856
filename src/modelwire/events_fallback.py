"""The `llm/fallback` event payload: a failed attempt's next attempt moves to another route/model.

Pure data, like `modelwire.events` (which registers it in the event-type registry, so every log
reader decodes it): it lives in a module of its own only to keep `events.py` within the module
size budget. `modelwire.retry.FallbackPlugin` writes it; `modelwire.session.events` re-exports it.
"""

from __future__ import annotations

import msgspec

from .vocab import LlmFailure

__all__ = ["LlmFallback"]


class LlmFallback(msgspec.Struct, frozen=True, kw_only=True):
    """`llm/fallback`: attempt `attempt` of step (`turn`, `step`) failed on `from_route` /
    `from_model` with `failure`, and the step's next attempt goes to `to_route` / `to_model`.

    `position` is the target's index in the fallback chain, counting the turn's configured
    route/model as position 0 when the chain does not list it. Appended and flushed before the
    next attempt; the latest one of a turn is where that turn's requests go.
    """

    turn: int
    step: int
    attempt: int
    from_route: str
    from_model: str
    to_route: str
    to_model: str
    failure: LlmFailure
    position: int
