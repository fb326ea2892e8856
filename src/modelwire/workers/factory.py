"""How a worker gets its database and its agent: the URL its own connections use, and the
user's factory called over the log (what it returned checked; given up when the worker is
stopped first: a factory that never returns must not keep a stopped worker alive).

On PostgreSQL a worker's connections end a transaction left idle for its lease
(`idle_in_transaction_session_timeout`, through libpq `options`): a paused worker's open
transaction, and the session locks it holds, then go when its lease does, so another worker
takes its tickets over. A setting the URL already makes is kept.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable
from typing import Any, TypeAlias
from urllib.parse import parse_qsl, quote, urlencode, urlsplit, urlunsplit

from ..agent import Agent
from ..errors import ErrorCode, HarnessError
from ..session import SessionLog

__all__ = ["AgentFactory", "build_agent", "worker_url"]

_IDLE = "idle_in_transaction_session_timeout"

AgentFactory: TypeAlias = Callable[[SessionLog], "Agent[Any] | Awaitable[Agent[Any]]"]
"""Builds the worker's agent over the log it opened (Any: agents of every output type)."""


async def build_agent(
    factory: AgentFactory, log: SessionLog, stopping: asyncio.Event
) -> Agent[Any]:  # Any: the user's agent
    """`factory(log)`, awaited if it is awaitable. A factory that raises, or returns anything but
    an `Agent`, is `INVALID_CONFIG` naming it; once `stopping` is set before it returns, it is
    cancelled and `ABORTED` names it."""
    name = getattr(factory, "__name__", factory)
    try:
        built = factory(log)
        if inspect.isawaitable(built):
            building = asyncio.ensure_future(built)
            waiting = asyncio.ensure_future(stopping.wait())
            try:
                await asyncio.wait({building, waiting}, return_when=asyncio.FIRST_COMPLETED)
            finally:
                waiting.cancel()
                if not building.done():
                    building.cancel()
                    await asyncio.gather(building, return_exceptions=True)
            if building.cancelled() and stopping.is_set():
                raise HarnessError(
                    f"worker stopped while its agent factory {name!r} was still building the "
                    "agent (it had not returned; nothing was claimed)",
                    ErrorCode.ABORTED,
                )
            agent = building.result()
        else:
            agent = built
    except HarnessError as exc:
        if exc.code == ErrorCode.ABORTED and stopping.is_set():
            raise
        raise _raised(name, exc) from exc
    except Exception as exc:
        raise _raised(name, exc) from exc
    if not isinstance(agent, Agent):
        raise HarnessError(
            f"worker factory returned {type(agent).__name__}, not an Agent",
            ErrorCode.INVALID_CONFIG,
        )
    return agent


def _raised(name: object, exc: Exception) -> HarnessError:
    return HarnessError(
        f"worker factory {name!r} raised: {type(exc).__name__}: {exc}",
        ErrorCode.INVALID_CONFIG,
        cause=exc,
    )


def worker_url(url: str, lease_ms: float) -> str:
    """`url` for a worker's own connections: on PostgreSQL with `-c {_IDLE}=LEASE` added to its
    libpq `options` (see the module docstring); any other URL as is."""
    if url.split(":", 1)[0].lower() not in ("postgresql", "postgres"):
        return url
    parts = urlsplit(url)
    query = parse_qsl(parts.query, keep_blank_values=True)
    options = " ".join(value for key, value in query if key == "options")
    if _IDLE in options:
        return url
    setting = f"-c {_IDLE}={max(1, int(lease_ms))}"
    rest = [(key, value) for key, value in query if key != "options"]
    rest.append(("options", f"{options} {setting}".strip()))
    return urlunsplit(parts._replace(query=urlencode(rest, quote_via=quote)))
