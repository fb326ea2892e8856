"""The agent's `on_turn` / `on_tool` wrapper chains the telemetry is built on (`Wrappers`).

Rules pinned: wrappers run in registration order, the first outermost; the work runs exactly
once whatever the wrappers do (call `call_next()` twice, or never); its result or exception is
what the chain gives, even if a wrapper swallows the exception or returns something else; a
wrapper's own exception propagates; a disposed wrapper no longer runs.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import pytest

from modelwire.agent.hooks import Wrappers

Next = Callable[[], Awaitable[str]]


def _counted(result: str | BaseException, runs: list[str]) -> Callable[[], Awaitable[str]]:
    async def work() -> str:
        runs.append("work")
        if isinstance(result, BaseException):
            raise result
        return result

    return work


async def test_wrappers_run_outermost_first_around_the_work() -> None:
    chain: Wrappers[str, str] = Wrappers("test")
    seen: list[str] = []

    def wrapper(name: str) -> Callable[[str, Next], Awaitable[None]]:
        async def wrap(payload: str, call_next: Next) -> None:
            seen.append(f"{name}:{payload}:in")
            seen.append(f"{name}:{await call_next()}")

        return wrap

    chain.add(wrapper("a"))
    chain.add(wrapper("b"))
    assert await chain.run("p", _counted("r", seen)) == "r"
    assert seen == ["a:p:in", "b:p:in", "work", "b:r", "a:r"]


async def test_the_work_runs_once_whether_call_next_is_called_twice_or_never() -> None:
    chain: Wrappers[str, str] = Wrappers("test")
    runs: list[str] = []

    async def twice(payload: str, call_next: Next) -> None:
        assert await call_next() == await call_next() == "r"

    async def never(payload: str, call_next: Next) -> None:
        return None

    dispose = chain.add(twice)
    assert await chain.run("p", _counted("r", runs)) == "r"
    dispose()
    chain.add(never)
    assert await chain.run("p", _counted("r", runs)) == "r"
    assert runs == ["work", "work"]


async def test_a_wrapper_cannot_swallow_the_works_exception_or_change_its_result() -> None:
    chain: Wrappers[str, str] = Wrappers("test")

    async def swallow(payload: str, call_next: Next) -> object:
        try:
            await call_next()
        except ValueError:
            return "replaced"
        return "replaced"

    chain.add(swallow)
    with pytest.raises(ValueError, match="from the work"):
        await chain.run("p", _counted(ValueError("from the work"), []))
    assert await chain.run("p", _counted("r", [])) == "r"


async def test_a_wrappers_own_exception_propagates() -> None:
    chain: Wrappers[str, str] = Wrappers("test")

    async def broken(payload: str, call_next: Next) -> None:
        await call_next()
        raise RuntimeError("wrapper bug")

    chain.add(broken)
    with pytest.raises(RuntimeError, match="wrapper bug"):
        await chain.run("p", _counted("r", []))
    assert len(chain) == 1
