"""How a worker builds its agent: call the user's factory over the log, check what it returned,
and give up when the worker is stopped first (a factory that never returns must not keep a
stopped worker alive)."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable
from typing import Any, TypeAlias

from ..agent import Agent
from ..errors import ErrorCode, HarnessError
from ..session import SessionLog

__all__ = ["AgentFactory", "build_agent"]

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
