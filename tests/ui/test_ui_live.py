"""Live tail: events appended to the log while a session is open reach the client as server-sent
`update` events — on memory, SQLite and PostgreSQL, with the agent writing through its own log
instance (as another process would). No test asserts on elapsed time: the bound is generous."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any  # JSON decoded from the server: its shape is what these checks check

from aiohttp import ClientResponse
from aiohttp.test_utils import TestClient, TestServer
from ui_logs import Pause, text
from ui_serving import POLL, Backend

from modelwire.ui import create_app
from modelwire.vocab import BlockStart, TextDelta

BOUND = 10.0
"""Seconds an appended event may take to show up before the test fails (generous: it takes
about one poll interval)."""


async def sse(response: ClientResponse) -> AsyncIterator[tuple[str, dict[str, str]]]:
    """(event name, fields) of each server-sent event."""
    fields: dict[str, str] = {}
    async for raw in response.content:
        line = raw.decode().rstrip("\r\n")
        if not line:
            if "data" in fields:
                yield fields.get("event", "message"), fields
            fields = {}
        elif not line.startswith(":"):
            name, _, value = line.partition(":")
            fields[name] = value.removeprefix(" ")


async def next_update(events: AsyncIterator[tuple[str, dict[str, str]]]) -> tuple[int, Any]:
    async with asyncio.timeout(BOUND):
        async for name, fields in events:
            if name == "update":
                return int(fields["id"]), json.loads(fields["data"])
    raise AssertionError("the stream ended")


async def until(events: AsyncIterator[tuple[str, dict[str, str]]], found: Any) -> list[Any]:
    seen = []
    async with asyncio.timeout(BOUND):
        while True:
            _, update = await next_update(events)
            seen.append(update)
            if found(update):
                return seen


def user_texts(update: Any) -> list[str]:
    return [b["text"] for i in update["transcript"] if i["kind"] == "user" for b in i["blocks"]]


async def test_appended_turns_appear_on_an_open_stream(backend: Backend) -> None:
    agent = backend.rig.agent()
    backend.rig.adapter.scripts.append(text("first answer"))
    await agent.run_turn("live-1", "first question")
    await backend.writer.flush()
    async with TestClient(TestServer(create_app(backend.reader, poll_interval=POLL))) as client:
        view: Any = await (await client.get("/api/session", params={"id": "live-1"})).json()
        since = view["next_seq"]
        response = await client.get("/api/live", params={"id": "live-1", "from_seq": since})
        assert response.status == 200
        assert response.headers["Content-Type"].startswith("text/event-stream")
        events = sse(response)
        backend.rig.adapter.scripts.append(text("second **answer**"))
        await agent.run_turn("live-1", "second question")
        await backend.writer.flush()
        updates = await until(
            events,
            lambda u: (
                not u["running"] and u["turns"][-1]["turn"] == 2 and u["turns"][-1]["outcome"]
            ),
        )
        merged = [i for u in updates for i in u["transcript"]]
        assert "second question" in [
            b["text"] for i in merged if i["kind"] == "user" for b in i["blocks"]
        ]
        assert "first question" not in [
            b["text"] for i in merged for b in i["blocks"]
        ]  # only what is new
        assert all(u["full"] is False for u in updates)
        assert [t["turn"] for t in updates[-1]["turns"]] == [2]  # turn 1 did not change
        assert updates[-1]["next_seq"] > since
        response.close()


async def test_a_reconnecting_client_resumes_from_its_last_event_id(backend: Backend) -> None:
    agent = backend.rig.agent()
    backend.rig.adapter.scripts += [text("a"), text("b")]
    await agent.run_turn("live-2", "one")
    await backend.writer.flush()
    resume_at = len(await backend.writer.read("live-2"))
    await agent.run_turn("live-2", "two")
    await backend.writer.flush()
    async with TestClient(TestServer(create_app(backend.reader, poll_interval=POLL))) as client:
        response = await client.get(
            "/api/live", params={"id": "live-2"}, headers={"Last-Event-ID": str(resume_at)}
        )
        seq, update = await next_update(sse(response))
        assert user_texts(update) == ["two"]
        assert seq == update["next_seq"] == len(await backend.writer.read("live-2"))
        response.close()


async def test_a_streaming_attempt_shows_as_a_draft_until_its_message_lands(
    backend: Backend,
) -> None:
    pause = Pause()
    backend.rig.adapter.scripts.append(
        [
            BlockStart(0, "text"),
            TextDelta(0, "Thinking out "),
            TextDelta(0, "loud"),
            pause,
            *text("Thinking out loud, done.")[3:],
        ]
    )
    agent = backend.rig.agent()
    turn = asyncio.create_task(agent.run_turn("live-3", "talk to me"))
    try:
        await asyncio.wait_for(pause.reached.wait(), BOUND)
        await backend.writer.flush()
        async with TestClient(TestServer(create_app(backend.reader, poll_interval=POLL))) as client:
            view: Any = await (await client.get("/api/session", params={"id": "live-3"})).json()
            assert view["running"] is True
            assert view["draft"]["kind"] == "draft"
            assert view["draft"]["blocks"] == [{"type": "text", "text": "Thinking out loud"}]
            (attempt,) = view["turns"][0]["steps"][0]["attempts"]
            assert attempt["status"] == "running" and attempt["end"] is None
            response = await client.get(
                "/api/live", params={"id": "live-3", "from_seq": view["next_seq"]}
            )
            events = sse(response)
            pause.go.set()
            await asyncio.wait_for(turn, BOUND)
            await backend.writer.flush()
            updates = await until(events, lambda u: not u["running"])
            assert updates[-1]["draft"] is None
            (reply,) = [i for u in updates for i in u["transcript"] if i["kind"] == "assistant"]
            assert reply["blocks"][0]["text"] == "Thinking out loud, done."
            response.close()
    finally:
        pause.go.set()
        await asyncio.wait_for(turn, BOUND)


async def test_the_stream_ends_when_the_server_shuts_down(backend: Backend) -> None:
    backend.rig.adapter.scripts.append(text("hi"))
    await backend.rig.agent().run_turn("live-4", "hello")
    await backend.writer.flush()
    client = TestClient(TestServer(create_app(backend.reader, poll_interval=POLL)))
    await client.start_server()
    response = await client.get("/api/live", params={"id": "live-4", "from_seq": 0})
    _, update = await next_update(sse(response))
    assert update["next_seq"] > 0
    async with asyncio.timeout(BOUND):
        await client.close()  # the SSE handler notices shutdown and returns: no 60 s hang
