"""The session projection on logs the agent tests do not produce: a fallback to another route,
a turn whose process died mid-stream, plugin events, events this process cannot decode, a
priced meter, and a list long enough to page."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from decimal import Decimal
from typing import Any  # JSON decoded from the server: its shape is what these checks check

import msgspec
import pytest
from aiohttp.test_utils import TestClient, TestServer

from modelwire.meter import CallKey, TokenMeter, UsageReport
from modelwire.session import (
    AssistantChunk,
    AssistantMessage,
    MemoryLog,
    RequestContext,
    RequestHeader,
    StepEnd,
    StepStart,
    TurnEnd,
    TurnInterrupted,
    TurnStart,
    UserMessage,
    register_event_type,
)
from modelwire.session.events import EpochHeader
from modelwire.ui import create_app
from modelwire.ui.costs import call_costs, cost_text, total_cost
from modelwire.vocab import (
    BlockStart,
    CallConfig,
    Error,
    Finish,
    LlmFailure,
    ModelSource,
    Stop,
    TextBlock,
    TextDelta,
    TokenUsage,
    UsageChunk,
    assistant_message,
    user_message,
)


class PluginNote(msgspec.Struct, frozen=True):
    note: str


register_event_type("test/ui-plugin-note", PluginNote)


async def served(log: MemoryLog) -> TestClient:
    client = TestClient(TestServer(create_app(log, poll_interval=0.02)))
    await client.start_server()
    return client


async def get(client: TestClient, path: str, **params: object) -> Any:
    response = await client.get(path, params={k: str(v) for k, v in params.items()})
    assert response.status == 200, await response.text()
    return await response.json()


def attempts(view: Any) -> list[Any]:
    return [a for t in view["turns"] for s in t["steps"] for a in s["attempts"]]


async def test_a_retry_served_by_another_route_is_a_fallback() -> None:
    log = MemoryLog()
    header = EpochHeader(config=CallConfig("primary", "big-1"))
    await log.append_many(
        "fb",
        [
            TurnStart(1),
            StepStart(1, 1),
            UserMessage(user_message("hi")),
            RequestHeader(header, "initial"),
            RequestContext("primary", "big-1", 128_000),
            AssistantChunk(1, 1, 1, Finish(Error(LlmFailure("down", "SERVER", status=502)))),
            RequestContext("backup", "small-2", 32_000),
            AssistantChunk(1, 1, 2, BlockStart(0, "text")),
            AssistantChunk(1, 1, 2, TextDelta(0, "hello")),
            AssistantChunk(1, 1, 2, Finish(Stop())),
            AssistantMessage(
                turn=1,
                step=1,
                attempt=2,
                message=assistant_message([TextBlock("hello")], ModelSource("backup", "small-2")),
                source_event_seqs=(7, 8, 9),
            ),
            StepEnd(1, 1),
            TurnEnd(1, TurnInterrupted()),
        ],
    )
    client = await served(log)
    try:
        view = await get(client, "/api/session", id="fb")
        first, second = attempts(view)
        assert (first["provider"], first["fallback"]) == ("primary", False)
        assert (second["provider"], second["model"], second["fallback"]) == (
            "backup",
            "small-2",
            True,
        )
        detail = await get(client, "/api/attempt", id="fb", turn=1, step=1, attempt=2)
        assert detail["context"]["context"]["context_window"] == 32_000
        assert detail["header"]["header"]["config"]["provider"] == "primary"
    finally:
        await client.close()


async def test_an_attempt_cut_off_by_a_dead_process_is_unfinished() -> None:
    log = MemoryLog()
    await log.append_many(
        "dead",
        [
            TurnStart(1),
            StepStart(1, 1),
            UserMessage(user_message("long answer please")),
            AssistantChunk(1, 1, 1, BlockStart(0, "text")),
            AssistantChunk(1, 1, 1, TextDelta(0, "Once upon")),
            TurnEnd(1, TurnInterrupted()),  # written by persistence repair
        ],
    )
    client = await served(log)
    try:
        view = await get(client, "/api/session", id="dead")
        (attempt,) = attempts(view)
        assert attempt["status"] == "unfinished" and attempt["end"] is not None
        assert view["running"] is False and view["draft"] is None
        assert view["transcript"][-1]["blocks"][0]["text"] == "turn 1 ended: interrupted"
        (row,) = (await get(client, "/api/sessions"))["items"]
        assert row["outcome"] == "interrupted"
    finally:
        await client.close()


async def test_plugin_and_undecodable_events_become_timeline_markers() -> None:
    log = MemoryLog()
    await log.append_many("odd", [TurnStart(1), StepStart(1, 1), PluginNote("switched to plan B")])
    # a type registered only in the process that wrote it (a plugin this one never imported)
    await log._store("odd", [("elsewhere/plugin", 1, b'{"x": 1}')], barrier=False)
    await log.append_many("odd", [StepEnd(1, 1), TurnEnd(1, TurnInterrupted())])
    client = await served(log)
    try:
        view = await get(client, "/api/session", id="odd")
        markers = view["turns"][0]["steps"][0]["markers"]
        assert [m["type"] for m in markers] == ["test/ui-plugin-note", "ui/unreadable"]
        assert markers[0]["text"] == '{"note":"switched to plan B"}'
        assert "elsewhere/plugin" in markers[1]["text"] and markers[1]["seq"] == 3
        assert view["turns"][0]["outcome"] == "interrupted"  # the events after it still count
        raw = await get(client, "/api/events", id="odd")
        assert [e["type"] for e in raw["items"]][3] == "ui/unreadable"
        (row,) = (await get(client, "/api/sessions"))["items"]
        assert row["events"] == 6
    finally:
        await client.close()


@dataclass(frozen=True)
class PricedReport(UsageReport):
    """What the meter will offer once it prices calls (another issue): `.cost`, `.calls_cost`."""

    cost: Decimal | None = None
    calls_cost: dict[CallKey, Decimal] | None = None


async def test_cost_is_shown_when_the_meter_offers_it(monkeypatch: pytest.MonkeyPatch) -> None:
    plain = TokenMeter.report

    def priced(self: TokenMeter) -> UsageReport:
        report = plain(self)
        price = Decimal("0.000002")
        calls = {key: usage.total_tokens * price for key, usage in report.calls.items()}
        return PricedReport(
            report.total,
            report.calls,
            report.turns,
            report.seq,
            cost=sum(calls.values(), Decimal(0)),
            calls_cost=calls,
        )

    monkeypatch.setattr(TokenMeter, "report", priced)
    log = MemoryLog()
    await log.append_many(
        "paid",
        [
            TurnStart(1),
            StepStart(1, 1),
            AssistantChunk(1, 1, 1, UsageChunk(TokenUsage(1000, 500))),
            AssistantChunk(1, 1, 1, Finish(Stop())),
        ],
    )
    client = await served(log)
    try:
        view = await get(client, "/api/session", id="paid")
        assert view["cost"] == "0.003000"
        assert view["calls"][0]["cost"] == "0.003000"
        assert attempts(view)[0]["cost"] == "0.003000"
        (row,) = (await get(client, "/api/sessions"))["items"]
        assert row["cost"] == "0.003000"
    finally:
        await client.close()


def test_costs_are_read_from_the_meter_or_left_blank() -> None:
    report = TokenMeter.project([])
    assert total_cost(report) is None and call_costs(report) == {}
    assert cost_text(Decimal("1E-7")) == "0.0000001"
    assert cost_text(0.25) == "0.25"
    assert cost_text(None) is None and cost_text(True) is None and cost_text("1") is None
    assert cost_text(Decimal("NaN")) is None


async def test_a_long_list_pages_by_id_and_by_derived_columns() -> None:
    log = MemoryLog()
    for n in range(120):
        await log.append_many(
            f"s{n:03d}",
            [
                TurnStart(1),
                AssistantChunk(1, 1, 1, UsageChunk(TokenUsage(n, 1))),
                TurnEnd(1, TurnInterrupted()),
            ],
        )
    client = await served(log)
    try:
        seen: list[str] = []
        for offset in (0, 50, 100):
            page = await get(client, "/api/sessions", sort="id", order="asc", offset=offset)
            seen += [r["session_id"] for r in page["items"]]
        assert seen == [f"s{n:03d}" for n in range(120)]
        top = await get(client, "/api/sessions", sort="tokens", order="desc", limit=3)
        assert [r["tokens"] for r in top["items"]] == [120, 119, 118]
        assert top["matched"] == 120
        found = await get(client, "/api/sessions", q="s11", sort="id", order="asc", limit=500)
        assert [r["session_id"] for r in found["items"]] == [f"s11{d}" for d in range(10)]
    finally:
        await client.close()


async def test_a_page_does_not_wait_for_a_giant_session(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("modelwire.ui.listing.PAGE_BUDGET", 100)
    log = MemoryLog()
    await log.append_many("small", [TurnStart(1), TurnEnd(1, TurnInterrupted())])
    chunks = [AssistantChunk(1, 1, 1, TextDelta(0, "x")) for _ in range(500)]
    await log.append_many(
        "giant", [TurnStart(1), *chunks, AssistantChunk(1, 1, 1, UsageChunk(TokenUsage(7, 3)))]
    )
    client = await served(log)
    try:
        rows = {r["session_id"]: r for r in (await get(client, "/api/sessions"))["items"]}
        assert rows["small"]["pending"] is False and rows["small"]["turns"] == 1
        giant = rows["giant"]
        assert giant["pending"] is True and giant["events"] == 502
        assert giant["tokens"] is None and giant["outcome"] is None
        for _ in range(200):  # summarized in the background; a later request has it
            rows = {r["session_id"]: r for r in (await get(client, "/api/sessions"))["items"]}
            if not rows["giant"]["pending"]:
                break
            await asyncio.sleep(0.01)
        assert rows["giant"]["tokens"] == 10 and rows["giant"]["outcome"] == "running"
    finally:
        await client.close()


async def test_a_giant_session_answers_a_first_page_and_streams_the_rest(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr("modelwire.ui.handlers.FIRST_PAGE_EVENTS", 10)
    log = MemoryLog()
    events: list[msgspec.Struct] = [
        TurnStart(1),
        StepStart(1, 1),
        AssistantChunk(1, 1, 1, BlockStart(0, "text")),
    ]
    events += [AssistantChunk(1, 1, 1, TextDelta(0, "x")) for _ in range(12_000)]
    events += [
        AssistantChunk(1, 1, 1, Finish(Stop())),
        StepEnd(1, 1),
        TurnEnd(1, TurnInterrupted()),
    ]
    await log.append_many("giant", events)
    client = await served(log)
    try:
        first = await get(client, "/api/session", id="giant")
        assert first["complete"] is False
        assert 10 <= first["next_seq"] < len(events)
        (attempt,) = attempts(first)
        assert attempt["status"] == "running"  # as of the prefix
        response = await client.get(
            "/api/live", params={"id": "giant", "from_seq": first["next_seq"]}
        )
        async with asyncio.timeout(10):
            async for raw in response.content:
                if raw.startswith(b"data: "):
                    rest = msgspec.json.decode(raw[6:])
                    break
        response.close()
        assert rest["complete"] is True and rest["next_seq"] == len(events)
        (attempt,) = attempts(rest)
        assert attempt["status"] == "ok" and attempt["chunks"] == 12_002
        again = await get(client, "/api/session", id="giant")
        assert again["complete"] is True
    finally:
        await client.close()
