"""Issue 37: resuming an agent turn's UI message stream after a cut, from the log — in the same
process or another `modelwire serve` on the same PostgreSQL — with no duplicate and no gap by seq;
bad input on the agent endpoints; many followers of one turn share one log reader."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import aiohttp
import pytest
from pgschema import PG_URL, create_schema_url, drop_schema, needs_postgres
from web_helpers import WebModel, read_sse, sdk, serve_process, serving, user

from modelwire.serve.agents import AGENTS
from modelwire.serve.uistream import UiEncoder
from modelwire.session import open_log


@pytest.fixture(autouse=True)
def _counter(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("APPROVAL_COUNTER", str(tmp_path / "ran.txt"))


@pytest.fixture
async def model() -> WebModel:
    m = WebModel()
    await m.start()
    yield m  # type: ignore[misc]
    await m.stop()


async def expected_frames(log_url: str, sid: str) -> list[tuple[int, str]]:
    """The (seq, data) of every SSE event of the session's last turn, encoded from the log."""
    log = await open_log(log_url)
    try:
        events = await log.read(sid)
    finally:
        await log.close()
    starts = [e.seq for e in events if e.type == "turn/start"]
    encoder = UiEncoder(sid)
    out: list[tuple[int, str]] = []
    for event in events:
        if event.seq < starts[-1]:
            continue
        for part in encoder.parts(event):
            out.append((event.seq, json.dumps(part, sort_keys=True)))
    return out


async def following(app: object, sid: str, clients: int) -> None:
    """Wait (a state, not a deadline; 60 s hang guard) until exactly `clients` follow `sid`'s
    tail."""
    host = app[AGENTS]  # type: ignore[index]
    for _ in range(6000):
        tail = host.followers._tails.get((sid, "ui"))
        if tail is not None and tail.clients == clients:
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"nobody followed {sid!r}")


def pairs(events: list[dict[str, object]]) -> list[tuple[int, str]]:
    return [
        (int(str(e["id"])), json.dumps(json.loads(str(e["data"])), sort_keys=True))
        for e in events
        if e["data"] != "[DONE]"
    ]


@needs_postgres
async def test_resume_from_another_serve_process_on_postgres_has_no_gap_and_no_duplicate(
    model: WebModel, tmp_path: Path
) -> None:
    assert PG_URL is not None
    schema, url = await create_schema_url(PG_URL)
    try:
        model.hold = True
        async with serving(model, url) as first, aiohttp.ClientSession() as http:
            body = {"id": "cut-1", "messages": [user("alpha beta gamma")]}
            response = await http.post(f"{first}/v1/agents/bot/chat", json=body)
            head = await read_sse(response, stop_after=3)
            response.close()  # the cut: the turn goes on in the first process
            await asyncio.wait_for(model.holding.wait(), 30)
            last = head[-1]["id"]
            async with serve_process(model, url, tmp_path, tmp_path / "ran.txt") as second:
                headers = {"Last-Event-ID": str(last)}
                stream = f"{second}/v1/agents/bot/chat/cut-1/stream"
                async with http.get(stream, headers=headers) as resumed:
                    assert resumed.status == 200
                    assert resumed.headers["x-vercel-ai-ui-message-stream"] == "v1"
                    model.release.set()  # the rest arrives while the second process follows
                    rest = await asyncio.wait_for(read_sse(resumed), 60)
                async with http.get(stream) as after:
                    assert after.status == 204  # the turn has ended: nothing runs
        assert rest[-1]["data"] == "[DONE]"
        got = pairs(head) + pairs(rest)
        assert got == await expected_frames(url, "cut-1")
        assert len(set(got)) == len(got)
        text = "".join(json.loads(d).get("delta", "") for _, d in got if '"text-delta"' in d)
        assert text == "echo alpha beta gamma"
    finally:
        await drop_schema(PG_URL, schema)


async def test_resume_without_last_event_id_replays_the_running_turn_to_the_sdk(
    model: WebModel,
) -> None:
    model.hold = True
    async with serving(model) as url, aiohttp.ClientSession() as http:
        body = {"id": "r2", "messages": [user("one two three")]}
        response = await http.post(f"{url}/v1/agents/bot/chat", json=body)
        await asyncio.wait_for(model.holding.wait(), 30)
        response.close()
        await following(url.app, "r2", 0)  # the server saw the cut
        resumed = asyncio.ensure_future(sdk("resume", f"{url}/v1/agents/bot/chat", "r2"))
        await following(url.app, "r2", 1)
        model.release.set()
        got = await resumed
    assert got["status"] == 200
    texts = [p["text"] for p in got["message"]["parts"] if p["type"] == "text"]
    assert texts == ["echo one two three"]
    assert got["message"]["id"] == "r2:t1"


async def test_a_thousand_followers_of_one_turn_share_one_log_reader(model: WebModel) -> None:
    model.hold = True
    async with serving(model) as url:
        async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as http:
            body = {"id": "many", "messages": [user("shared answer")]}
            first = await http.post(f"{url}/v1/agents/bot/chat", json=body)
            await asyncio.wait_for(model.holding.wait(), 30)
            followers = [
                await http.get(f"{url}/v1/agents/bot/chat/many/stream") for _ in range(999)
            ]
            host = url.app[AGENTS]
            assert host.followers is not None
            tails = host.followers._tails
            assert len(tails) == 1
            assert tails[("many", "ui")].clients == 1000
            model.release.set()
            streams = await asyncio.gather(*(read_sse(f) for f in [first, *followers]))
            for f in [first, *followers]:
                f.close()
    reference = pairs(streams[0])
    assert all(pairs(s) == reference for s in streams)


async def test_bad_input_on_the_agent_endpoints(model: WebModel) -> None:
    async with serving(model) as url, aiohttp.ClientSession() as http:
        chat = f"{url}/v1/agents/bot/chat"
        async with http.post(chat, data=b"{not json") as r:
            assert r.status == 400 and (await r.json())["error"]["code"] == "INVALID_REQUEST"
        async with http.post(chat, json={"id": "b", "messages": []}) as r:
            assert r.status == 400 and "messages" in (await r.json())["error"]["message"]
        async with http.post(chat, json={"messages": [user("x")]}) as r:
            assert r.status == 400 and "id" in (await r.json())["error"]["message"]
        async with http.post(f"{url}/v1/agents/nope/chat", json={"id": "b"}) as r:
            assert r.status == 404 and (await r.json())["error"]["code"] == "UNKNOWN_AGENT"
        async with http.get(f"{chat}/never-seen/stream") as r:
            assert r.status == 404 and (await r.json())["error"]["code"] == "SESSION_NOT_FOUND"
        async with http.get(f"{chat}/x/stream?from_seq=abc") as r:
            assert r.status == 400
        async with http.post(chat, json={"id": "h", "messages": [user("first")]}) as r:
            await r.read()
        rewritten = [
            user("not what was said"),
            {"id": "a", "role": "assistant", "parts": []},
            user("second", "u2"),
        ]
        async with http.post(chat, json={"id": "h", "messages": rewritten}) as r:
            assert r.status == 409 and (await r.json())["error"]["code"] == "HISTORY_MISMATCH"
        async with http.get(f"{chat}/h/stream") as r:
            assert r.status == 204


async def test_a_new_session_starts_from_the_clients_messages(model: WebModel) -> None:
    async with serving(model) as url:
        history = [
            user("earlier question", "u0"),
            {"id": "a0", "role": "assistant", "parts": [{"type": "text", "text": "earlier"}]},
            user("now this", "u1"),
        ]
        got = await sdk("send", f"{url}/v1/agents/bot/chat", "fresh", history)
    assert [p["text"] for p in got["message"]["parts"] if p["type"] == "text"] == ["echo now this"]
    sent = model.requests[-1]["messages"]
    assert [(m["role"], m["content"]) for m in sent] == [
        ("user", "earlier question"),
        ("assistant", "earlier"),
        ("user", "now this"),
    ]


@pytest.mark.parametrize(
    ("spec", "said"),
    [
        ("nofactory", "expected NAME=MODULE:FACTORY"),
        ("bot=no_such_module_mw37:make", "no module named 'no_such_module_mw37'"),
        ("bot=approval_agent:missing", "has no attribute 'missing'"),
    ],
)
def test_serve_agent_option_errors_are_one_line(tmp_path: Path, spec: str, said: str) -> None:
    import os
    import subprocess
    import sys

    support = str(Path(__file__).parents[1] / "support")
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "modelwire",
            "serve",
            "--log",
            f"sqlite:///{tmp_path}/a.db",
            "--port",
            "0",
            "--agent",
            spec,
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={**os.environ, "PYTHONPATH": support},
    )
    assert done.returncode == 2, done.stderr
    assert said in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
