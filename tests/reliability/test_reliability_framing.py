"""Issue 29's HTTP-client cases on every adapter, through `rt.stream()` against the fault server.

Rules pinned, for each of the four adapters: a chunk size of 2^80 after a good chunk is one
``TRANSPORT`` failure (never a clean stop, the good chunk's text kept before it); a flood of
``100 Continue`` heads, 10,000 obs-fold lines and a head over 64 KiB sent in one write are each one
``TRANSPORT`` failure found within the 64 KiB head cap (bounded work: no head byte past the cap is
parsed, none twice); a bare LF inside a 429's ``x-request-id`` refuses the whole head, so nothing
of it (no request id, no injected header) reaches the failure; a response framed by both
Transfer-Encoding and Content-Length fails and its connection is never reused; ``100 Continue``
heads dripped slowly under the cap meet the idle deadline (``TIMEOUT``), the head wait being one
guarded await however many interim heads arrive.
"""

from __future__ import annotations

import asyncio

import pytest
from reliability_counts import bump
from reliability_scenarios import SSE_CHUNKED
from reliability_server import Behaviour, Conn, FaultServer, chunked
from reliability_wire import ADAPTERS, IDLE_MS, good_events
from test_reliability_faults import assert_released, collect, terminal

from modelwire.vocab import Error

HEAD_CAP = 1 << 16


def _then_wait(wire: bytes) -> Behaviour:
    """Send `wire` whole, then wait for the client to hang up."""

    async def behave(conn: Conn, reader: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
        await conn.send(w, wire)
        await reader.read()

    return behave


def _hostile(kind: str, case: str) -> bytes:
    if case == "chunk-2^80-after-a-good-chunk":
        return SSE_CHUNKED + chunked(good_events(kind)[:3])[:-5] + b"%x\r\n" % 2**80
    if case == "100-continue-flood":
        return b"HTTP/1.1 100 Continue\r\n\r\n" * 5000
    if case == "10000-obs-fold-lines":
        return b"HTTP/1.1 200 OK\r\nX-A: a\r\n" + b" folded\r\n" * 10_000 + b"\r\n"
    if case == "bare-lf-in-a-request-id":
        return (
            b"HTTP/1.1 429 Too Many\r\nx-request-id: req-1\nInjected: yes\r\n"
            b"content-length: 0\r\n\r\n"
        )
    assert case == "head-over-64-kib-in-one-read"
    return b"HTTP/1.1 200 OK\r\nX-Pad: " + b"p" * 70_000 + b"\r\ncontent-length: 2\r\n\r\nok"


CASES = {
    "chunk-2^80-after-a-good-chunk": "the chunked response body is malformed",
    "100-continue-flood": "the response head is too large",
    "10000-obs-fold-lines": "the response head is malformed",
    "bare-lf-in-a-request-id": "the response head is malformed",
    "head-over-64-kib-in-one-read": "the response head is too large",
}


@pytest.mark.parametrize("kind", ADAPTERS)
@pytest.mark.parametrize("case", list(CASES), ids=list(CASES))
async def test_a_hostile_framing_is_one_transport_failure_on_every_adapter(
    server: FaultServer, kind: str, case: str
) -> None:
    server.behaviour = _then_wait(_hostile(kind, case))
    before = set(asyncio.all_tasks())
    finish, text = terminal(await collect(kind, server.url))
    assert isinstance(finish.reason, Error), (case, kind, finish)
    if case.startswith("chunk"):
        assert text.startswith("Hello"), text  # the good chunks' text came before the failure
    failure = finish.reason.failure
    assert failure.code == "TRANSPORT" and CASES[case] in failure.message, failure
    assert failure.request_id is None and "req-1" not in failure.message
    assert "Injected" not in failure.message and "\n" not in failure.message
    assert server.requests == 1
    await assert_released(server, before)
    bump("scenario runs (scenarios x adapters)")


@pytest.mark.parametrize("kind", ADAPTERS)
async def test_both_framings_fail_and_the_connection_is_never_reused(
    server: FaultServer, kind: str
) -> None:
    body = chunked(good_events(kind))
    both = (
        b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
        + f"Content-Length: {len(body)}\r\nTransfer-Encoding: chunked\r\n\r\n".encode()
        + body
    )

    async def behave(conn: Conn, reader: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
        await conn.send(w, both)
        conn.complete = True  # a whole response by either framing: reuse would be possible

    server.behaviour = behave
    before = set(asyncio.all_tasks())
    for _ in range(2):
        finish, _ = terminal(await collect(kind, server.url))
        assert isinstance(finish.reason, Error), finish
        assert finish.reason.failure.code == "TRANSPORT"
        assert "Transfer-Encoding can't be present with Content-Length" in (
            finish.reason.failure.message
        )
    assert len(server.conns) == 2 and server.conns[0].closed  # each call on a fresh connection
    await assert_released(server, before)


@pytest.mark.parametrize("kind", ADAPTERS)
async def test_interim_heads_dripped_under_the_cap_meet_the_idle_deadline(
    server: FaultServer, kind: str
) -> None:
    interim = b"HTTP/1.1 100 Continue\r\n\r\n"
    sent: list[int] = []

    async def behave(conn: Conn, reader: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
        # One head every 10 ms: the cap would take 26 s to reach; the budget is 200 ms.
        for _ in range(HEAD_CAP // len(interim) - 1):
            await conn.send(w, interim)
            sent.append(1)
            await asyncio.sleep(0.01)
        await reader.read()

    server.behaviour = behave
    before = set(asyncio.all_tasks())
    finish, _ = terminal(await collect(kind, server.url, idle_ms=IDLE_MS))
    assert isinstance(finish.reason, Error), finish
    assert finish.reason.failure.code == "TIMEOUT", finish.reason.failure
    assert len(sent) < HEAD_CAP // len(interim) - 1  # it gave up while heads still came
    await assert_released(server, before)
