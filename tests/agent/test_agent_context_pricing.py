"""`request/context` carries the route's list prices: logged with the first request, again when
the prices change (same route, model and window), never again when they do not — also across
agents and after a log written before prices were logged."""

from __future__ import annotations

from decimal import Decimal

from agent_helpers import Rig, of_type, text_script

from modelwire.meter import TokenMeter
from modelwire.session import RequestContext
from modelwire.vocab import ModelContext, ModelPricing, ResolvedModelInfo, TokenUsage

SID = "priced"
P1 = ModelPricing(input=Decimal(1), output=Decimal(2))
P2 = ModelPricing(input=Decimal(3), output=Decimal(4), cache_read=Decimal("0.3"))


def _info(pricing: ModelPricing | None) -> ResolvedModelInfo:
    return ResolvedModelInfo(
        provider="x", id="x", name="x", context=ModelContext(64_000), pricing=pricing
    )


async def _contexts(rig: Rig) -> list[RequestContext]:
    return of_type(await rig.log.read(SID), "request/context")


async def test_the_prices_are_logged_once_while_they_hold(rig: Rig) -> None:
    rig.adapter.info = _info(P1)
    rig.adapter.queue(text_script("a"), text_script("b"))
    agent = rig.agent()
    await agent.run_turn(SID, "one")
    await agent.run_turn(SID, "two")
    assert await _contexts(rig) == [RequestContext("scripted", "m1", 64_000, P1)]
    other = rig.agent()  # a new agent (its own view of the session) reads them back
    rig.adapter.queue(text_script("c"))
    await other.run_turn(SID, "three")
    assert await _contexts(rig) == [RequestContext("scripted", "m1", 64_000, P1)]


async def test_a_price_change_on_the_same_route_is_logged_and_prices_the_next_calls(
    rig: Rig,
) -> None:
    rig.adapter.info = _info(P1)
    usage = TokenUsage(1_000, 100)
    rig.adapter.queue(text_script("a", usage=usage), text_script("b", usage=usage))
    agent = rig.agent()
    await agent.run_turn(SID, "one")
    rig.adapter.info = _info(P2)  # the catalog (or a profile's cost) changed between turns
    await agent.run_turn(SID, "two")
    assert await _contexts(rig) == [
        RequestContext("scripted", "m1", 64_000, P1),
        RequestContext("scripted", "m1", 64_000, P2),
    ]
    report = TokenMeter.project(await rig.log.read(SID))
    # turn 1 at P1: 1000×1 + 100×2 = 1200 → 0.0012; turn 2 at P2: 1000×3 + 100×4 = 3400 → 0.0034
    assert dict(report.turns_cost) == {1: Decimal("0.0012"), 2: Decimal("0.0034")}
    assert report.cost == Decimal("0.0046")


async def test_a_session_logged_without_prices_gets_them_once(rig: Rig) -> None:
    rig.adapter.queue(text_script("a"), text_script("b"), text_script("c"))
    await rig.agent().run_turn(SID, "one")  # unpriced: the context has no `pricing`
    rig.adapter.info = _info(None)
    await rig.agent().run_turn(SID, "two")  # the window appeared: logged again, still unpriced
    rig.adapter.info = _info(P1)
    agent = rig.agent()
    await agent.run_turn(SID, "three")
    assert await _contexts(rig) == [
        RequestContext("scripted", "m1"),
        RequestContext("scripted", "m1", 64_000),
        RequestContext("scripted", "m1", 64_000, P1),
    ]
