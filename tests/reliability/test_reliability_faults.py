"""Every fault scenario against every adapter, through `rt.stream()`.

For each (scenario, adapter): the stream ends in exactly one terminal `finish`, the last chunk,
with the expected kind and code (and text / status / Retry-After where the scenario pins them);
the runtime never raises; the failure text carries no secret; every connection the server saw
is released (closed by the client unless a complete response made it poolable), and then all
close with the pooled session; no asyncio task is leaked.
"""

from __future__ import annotations

import asyncio
import copy
import json
from collections.abc import Iterator

import pytest
from reliability_counts import assert_no_secret, bump, fact
from reliability_scenarios import BIG, SCENARIOS, Expect, Scenario, sse_response
from reliability_server import FaultServer, closed_port
from reliability_wire import ADAPTERS, good_events, make_runtime

from modelwire.assembler import BlockAssembler
from modelwire.vocab import Error, Finish, StreamChunk, TextBlock
from modelwire.wire.http import close_sessions

fact("adapters", len(ADAPTERS))
fact("fault scenarios", len(SCENARIOS) + 1)  # + connection refused

CLASSIFIED = frozenset(
    {
        "AUTH",
        "RATE_LIMIT",
        "QUOTA",
        "SERVER",
        "CONTEXT_WINDOW_EXCEEDED",
        "PI_AI_ERROR",
        "TRANSPORT",
        "TIMEOUT",
        "STREAM_CLOSED",
        "MALFORMED_RESPONSE",
        "EMPTY_RESPONSE",
        "INVALID_REQUEST",
    }
)


async def collect(
    kind: str, url: str, timeout: float = 20.0, *, idle_ms: float = 10_000.0
) -> list[StreamChunk]:
    """Drain one `rt.stream()` call (never longer than `timeout`: a hang fails the test)."""
    target = make_runtime(kind, url, idle_ms=idle_ms)
    chunks: list[StreamChunk] = []
    async with asyncio.timeout(timeout):
        async for chunk in target.runtime.stream(target.options):
            chunks.append(chunk)
    return chunks


def terminal(chunks: list[StreamChunk]) -> tuple[Finish, str]:
    """The single finish (asserted last and unique) and the assembled text."""
    finishes = [c for c in chunks if isinstance(c, Finish)]
    assert len(finishes) == 1, f"expected exactly one finish, got {len(finishes)}: {chunks[-3:]}"
    assert chunks[-1] is finishes[0], "the finish must be the last chunk"
    asm = BlockAssembler()
    for chunk in chunks:
        asm.push(chunk)
    text = "".join(b.text for b in asm.blocks() if isinstance(b, TextBlock))
    finish = finishes[0]
    if isinstance(finish.reason, Error):
        assert_no_secret(finish.reason.failure.message, "a failure message")
    return finish, text


def check(finish: Finish, text: str, expect: Expect) -> None:
    reason = finish.reason
    assert reason.kind == expect.kind, (reason, expect)
    if expect.kind == "stop":
        if expect.text is not None:
            assert text == expect.text
        return
    assert isinstance(reason, Error)
    failure = reason.failure
    assert failure.code == expect.code, failure
    if expect.status is not None:
        assert failure.status == expect.status
        assert "<" not in failure.message, "an HTML page leaked into the failure message"
    if expect.retry_after_ms is None:
        assert failure.provider_retry_after_ms is None, failure
    elif expect.retry_after_approx:
        got = failure.provider_retry_after_ms
        assert got is not None and abs(got - expect.retry_after_ms) < 5_000, failure
    else:
        assert failure.provider_retry_after_ms == expect.retry_after_ms, failure


async def assert_released(server: FaultServer, before: set[asyncio.Task[object]]) -> None:
    """Unfinished responses are closed by the client; all close with the pool; no task leaks."""
    async with asyncio.timeout(3):
        while not all(c.closed or c.complete for c in server.conns):
            await asyncio.sleep(0.01)
    await close_sessions()
    assert await server.wait_closed(3) == 0, "a connection stayed open after the pool closed"
    await asyncio.sleep(0)
    leaked = {
        t for t in asyncio.all_tasks() if t not in before and not t.done() and t not in server.tasks
    } - {asyncio.current_task()}
    assert not leaked, f"leaked asyncio tasks: {leaked}"


@pytest.mark.parametrize("kind", ADAPTERS)
@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.name)
async def test_fault_scenario_ends_in_one_classified_finish(
    server: FaultServer, kind: str, scenario: Scenario
) -> None:
    server.behaviour = scenario.behaviour(kind)
    before = set(asyncio.all_tasks())
    chunks = await collect(kind, server.url, idle_ms=scenario.idle_ms)
    finish, text = terminal(chunks)
    check(finish, text, scenario.expect(kind))
    assert server.requests == 1, "exactly one HTTP request per stream() call"
    if scenario.expect(kind).bounded:
        sent = server.conns[0].sent
        assert sent < BIG // 2, f"the client read {sent} bytes of a 50 MB body"
    await assert_released(server, before)
    bump("scenario runs (scenarios x adapters)")


@pytest.mark.parametrize("kind", ADAPTERS)
async def test_fault_connection_refused_is_transport(kind: str) -> None:
    before = set(asyncio.all_tasks())
    chunks = await collect(kind, f"http://127.0.0.1:{closed_port()}")
    finish, text = terminal(chunks)
    check(finish, text, Expect("error", "TRANSPORT"))
    await close_sessions()
    leaked = {t for t in asyncio.all_tasks() if t not in before and not t.done()}
    assert not leaked - {asyncio.current_task()}
    bump("scenario runs (scenarios x adapters)")


# ---- JSON with unexpected types in every field --------------------------------------------------

_WRONG = (None, 0, -1, 1.5, True, "", "x", [], [1], {}, {"k": 1})


def _leaves(value: object, path: tuple[object, ...] = ()) -> Iterator[tuple[object, ...]]:
    yield path
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _leaves(v, (*path, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _leaves(v, (*path, i))


def _replace(doc: object, path: tuple[object, ...], new: object) -> object:
    if not path:
        return new
    out = copy.deepcopy(doc)
    node = out
    for key in path[:-1]:
        node = node[key]  # type: ignore[index]
    node[path[-1]] = new  # type: ignore[index]
    return out


def mutated_bodies(kind: str) -> Iterator[tuple[str, list[bytes]]]:
    """For every field of every event of a good answer, the body with that field of a wrong type."""
    events = good_events(kind)
    for i, raw in enumerate(events):
        lines = raw.decode().split("\n")
        data_at = next(j for j, x in enumerate(lines) if x.startswith("data: "))
        data = lines[data_at][6:]
        if not data.startswith("{"):
            continue
        doc = json.loads(data)
        for path in _leaves(doc):
            current = doc
            for key in path:
                current = current[key]
            for wrong in _WRONG:
                if type(wrong) is type(current) and wrong == current:
                    continue
                new_lines = list(lines)
                new_lines[data_at] = "data: " + json.dumps(_replace(doc, path, wrong))
                new_events = list(events)
                new_events[i] = "\n".join(new_lines).encode()
                yield f"event {i} {'/'.join(map(str, path)) or '<root>'} = {wrong!r}", new_events


@pytest.mark.parametrize("kind", ADAPTERS)
async def test_fault_json_unexpected_types_in_every_field(server: FaultServer, kind: str) -> None:
    """Every field of every event, replaced by values of every other JSON type, still ends in
    one finish: a stop, or an error with a classified code (never an unclassified crash)."""
    before = set(asyncio.all_tasks())
    runs = 0
    target = make_runtime(kind, server.url)
    for label, events in mutated_bodies(kind):
        server.behaviour = sse_response(events)
        chunks: list[StreamChunk] = []
        async with asyncio.timeout(10):
            async for chunk in target.runtime.stream(target.options):
                chunks.append(chunk)
        finish, _ = terminal(chunks)
        if isinstance(finish.reason, Error):
            failure = finish.reason.failure
            # DeepSeek reports an unknown finish_reason under its own upper-cased code (B35).
            provider_stop = kind == "deepseek" and failure.message.startswith("model stopped: ")
            assert failure.code in CLASSIFIED or provider_stop, f"{label}: unclassified {failure}"
        runs += 1
    assert runs > 50
    await assert_released(server, before)
    bump("type-mutation streams", runs)
