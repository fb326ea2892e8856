"""`Scope`, the Python stand-in for upstream fibers (spec §8.2): ownership and release order."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from runtime_helpers import ScriptedAdapter, collect, opts

from modelwire.errors import HarnessError
from modelwire.runtime import CallNext, LlmRuntime, Scope
from modelwire.vocab import GenerateOptions, StreamChunk, TextDelta


async def test_scope_aclose_awaits_async_disposers_in_reverse_order() -> None:
    order: list[str] = []

    async def later() -> None:
        order.append("async")

    scope = Scope()
    scope.add(lambda: order.append("sync"))
    scope.add(later)
    await scope.aclose()
    await scope.aclose()
    assert order == ["async", "sync"]


def test_scope_close_refuses_async_disposers_but_runs_the_rest() -> None:
    order: list[str] = []

    async def later() -> None:
        order.append("never")  # pragma: no cover - closed without running

    scope = Scope("plugin")
    scope.add(lambda: order.append("sync"))
    scope.add(later)
    with pytest.raises(HarnessError, match="aclose"):
        scope.close()
    assert order == ["sync"]


def test_scope_failures_do_not_stop_other_disposers() -> None:
    ran: list[int] = []

    def fail(n: int) -> None:
        ran.append(n)
        raise RuntimeError(f"disposer {n} failed")

    scope = Scope()
    scope.add(lambda: fail(1))
    scope.add(lambda: fail(2))
    with pytest.raises(ExceptionGroup) as caught:
        scope.close()
    assert ran == [2, 1] and len(caught.value.exceptions) == 2


async def test_scope_owns_middleware_listeners_and_discovery(rt: LlmRuntime) -> None:
    rt.register_adapter(["p"], ScriptedAdapter())
    events: list[int] = []

    async def tag(options: GenerateOptions, call_next: CallNext) -> AsyncIterator[StreamChunk]:
        yield TextDelta(7, "tag")
        async for chunk in call_next():
            yield chunk

    async def discover(request: object) -> list[object]:
        return []  # pragma: no cover

    with Scope("plugin") as scope:
        rt.use(tag, scope=scope)
        rt.on_adapter_change(lambda: events.append(1), scope=scope)
        rt.register_model_discovery("ns", discover, scope=scope)  # type: ignore[arg-type]
        assert (await collect(rt.stream(opts())))[0] == TextDelta(7, "tag")
    assert (await collect(rt.stream(opts())))[0] != TextDelta(7, "tag")
    assert rt.list_model_discovery_namespaces() == []
    rt.register_adapter(["q"], ScriptedAdapter())
    assert events == []


def test_manual_dispose_leaves_the_scope(rt: LlmRuntime) -> None:
    scope = Scope()
    reg = rt.register_adapter(["p"], ScriptedAdapter(), scope=scope)
    reg()
    rt.register_adapter(["p"], ScriptedAdapter())
    scope.close()
    assert [p.id for p in rt.list_providers()] == ["p"]
