"""The inspector in a real browser: headless Chromium (Debian's package) driven over the DevTools
protocol — the list, a session, a click on an attempt, hostile text, live updates — with
screenshots decoded and checked for content (and kept for a human under
`$MODELWIRE_UI_SCREENSHOTS` when set).

Without Chromium these tests skip, except under CI (`CI=true`), where they fail: `.ci/run`
installs it.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from cdp import Browser, Page, chromium_path, launch
from png import png_stats
from ui_logs import XSS_USER, FakeClock, Pause, Sessions, build_sessions, rig_for, text

from modelwire.meter import TokenMeter
from modelwire.session import MemoryLog, UserMessage, open_log
from modelwire.ui import UiServer, serve
from modelwire.vocab import BlockEnd, BlockStart, Finish, Stop, TextBlock, TextDelta, user_message

HOSTILE_ID = '<img src=x onerror="window.__pwned = 7">'
BOUND = 15.0
"""Seconds the page may take to show something (generous; it is about one poll interval)."""


def _chromium() -> str:
    found = chromium_path()
    if found is None:
        if os.environ.get("CI") == "true":
            pytest.fail(
                "CI=true but Chromium is missing: .ci/run installs it (apt-get install chromium)"
            )
        pytest.skip(
            "Chromium is not installed (apt-get install chromium, or set MODELWIRE_CHROMIUM)"
        )
    return found


@dataclass
class Scene:
    server: UiServer
    browser: Browser
    page: Page
    ids: Sessions
    log: MemoryLog
    clock: FakeClock
    shots: Path

    async def open(self, path: str) -> None:
        await self.page.goto(self.server.url.rstrip("/") + path)
        await self.page.wait_for("document.body.dataset.loaded", timeout=BOUND)

    async def shot(self, name: str) -> None:
        data = await self.page.screenshot(self.shots / f"{name}.png")
        stats = png_stats(data)
        assert (stats.width, stats.height) == (1400, 1000)
        assert stats.colors >= 20, f"{name}.png looks blank: {stats}"
        assert stats.foreground >= 0.02, f"{name}.png looks blank: {stats}"

    async def count(self, selector: str) -> int:
        return int(
            await self.page.evaluate(f"document.querySelectorAll({json.dumps(selector)}).length")
        )

    async def text(self, selector: str) -> str:
        return str(
            await self.page.evaluate(f"document.querySelector({json.dumps(selector)}).textContent")
        )


@pytest.fixture
async def scene(tmp_path: Path) -> AsyncIterator[Scene]:
    binary = _chromium()
    clock = FakeClock()
    log = MemoryLog(clock=clock)
    ids = await build_sessions(rig_for(log, clock))
    await log.append(HOSTILE_ID, UserMessage(user_message("hostile id")))
    shots = Path(os.environ.get("MODELWIRE_UI_SCREENSHOTS") or tmp_path)
    shots.mkdir(parents=True, exist_ok=True)
    server = await serve(log, poll_interval=0.05)
    try:
        async with launch(binary) as browser:
            page = await browser.new_page()
            yield Scene(server, browser, page, ids, log, clock, shots)
            assert page.exceptions == [], page.exceptions
    finally:
        await server.close()


async def test_the_list_sorts_searches_and_opens_a_session(scene: Scene) -> None:
    page = scene.page
    await scene.open("/")
    assert await scene.count("#sessions tbody tr") == 5
    hrefs = await page.evaluate(
        "[...document.querySelectorAll('#sessions td.id a')].map(a => a.getAttribute('href'))"
    )
    assert "/session?id=team%2Fa%20b%231%3Fx%3Dy%26z" in hrefs
    assert await page.evaluate("window.__pwned") is None  # the hostile session id is only text
    assert HOSTILE_ID in await scene.text("#sessions tbody")
    await scene.shot("list")

    await page.click('th[data-sort="tokens"] button')
    await page.wait_for(
        "document.querySelector('#sessions tbody tr').dataset.session === 'retries'", timeout=BOUND
    )
    assert "sort=tokens" in await page.evaluate("location.search")
    await page.click("#q")
    await page.send("Input.insertText", {"text": "xss"})
    await page.wait_for(
        "document.querySelectorAll('#sessions tbody tr').length === 1", timeout=BOUND
    )
    assert await scene.text("#range") == "1–1 of 1 matching of 5"

    await page.click("#sessions td.id a")
    await page.wait_for(
        "location.pathname === '/session' && document.body.dataset.loaded", timeout=BOUND
    )
    assert await page.evaluate("new URLSearchParams(location.search).get('id')") == "xss"


async def test_a_session_shows_transcript_timeline_and_attempt_details(scene: Scene) -> None:
    page = scene.page
    await scene.open("/session?id=retries")
    # transcript: markdown rendered, reasoning collapsed, the tool call carrying its result
    assert await page.evaluate(
        "[...document.querySelectorAll('#transcript .md strong')].map(e => e.textContent)"
    ) == ["42"]
    assert await scene.count("#transcript details.reasoning") == 1
    assert (
        await page.evaluate("document.querySelector('#transcript details.reasoning').open") is False
    )
    assert await scene.text('.tool-call[data-call="call_add_1"] .tool-result pre') == "42"
    assert await scene.count("#transcript .msg.tool") == 0  # paired, not shown on its own
    assert "RATE_LIMIT (HTTP 429)" in await scene.text("#transcript .note.is-error")
    # timeline: four failed attempts (1 in turn 1, 3 in turn 2), the retry waits, the tool run
    assert await scene.count(".tl-turn") == 2
    assert await scene.count(".tl-attempt.status-failed") == 4
    assert await scene.count(".tl-attempt.status-ok") == 2
    assert await scene.count(".tl-wait") == 3
    assert await scene.count(".tl-tool") == 1
    assert await scene.count("#chart svg g.call") == 3

    await page.click('.tl-attempt[data-key="1.1.1"]')
    await page.wait_for(
        "document.getElementById('detail').dataset.attempt === '1.1.1'", timeout=BOUND
    )
    detail = await scene.text("#detail")
    assert "RATE_LIMIT" in detail and "429" in detail and "slow down" in detail
    assert "You are terse." in detail and "add, lookup" in detail
    assert await scene.count("#detail tr.chunk") == 4
    assert "error — RATE_LIMIT (HTTP 429): slow down" in await scene.text("#detail tr.chunk-finish")
    assert await page.evaluate(
        "document.querySelector('.tl-attempt[data-key=\"1.1.1\"]').classList.contains('selected')"
    )
    await scene.shot("session-failed-attempt")

    await page.click('.tl-attempt[data-key="1.1.2"]')
    await page.wait_for(
        "document.getElementById('detail').dataset.attempt === '1.1.2'", timeout=BOUND
    )
    assert await scene.count("#detail tr.chunk") == 9
    assert "tool-calls" in await scene.text("#detail")


async def test_hostile_message_text_renders_as_text(scene: Scene) -> None:
    page = scene.page
    await scene.open("/session?id=xss")
    await page.wait_for("document.querySelectorAll('#transcript .msg').length >= 3", timeout=BOUND)
    assert await page.evaluate("window.__pwned") is None
    assert await scene.count("#transcript script, #transcript img, #transcript b") == 0
    assert await scene.count("img") == 0
    transcript = await scene.text("#transcript")
    assert XSS_USER.split(" **hi**")[0] in transcript
    assert '<img src="x" onerror="window.__pwned = 4">' in transcript
    assert "<b>not bold</b>" in await scene.text("#transcript pre code[data-lang='html']")
    links = await page.evaluate(
        "[...document.querySelectorAll('#transcript a')].map(a => [a.href, a.rel])"
    )
    assert links == [
        ["https://example.com/docs", "noopener noreferrer nofollow"]
    ]  # javascript: is text
    assert "(javascript:window.__pwned=5)" in transcript
    await scene.shot("session-hostile-text")
    await scene.open(f"/session?id={HOSTILE_ID}")
    assert await scene.text("#sid") == HOSTILE_ID
    assert await page.evaluate("window.__pwned") is None


async def test_a_running_session_updates_live(scene: Scene) -> None:
    page = scene.page
    rig = rig_for(scene.log, scene.clock)
    agent = rig.agent()
    rig.adapter.scripts.append(text("first"))
    await agent.run_turn("live", "first question")
    await scene.open("/session?id=live")
    before = int(await page.evaluate("document.body.dataset.nextSeq"))

    pause = Pause()
    rig.adapter.scripts.append(
        [
            BlockStart(0, "text"),
            TextDelta(0, "streaming so far"),
            pause,
            *text("streaming so far, done")[2:],
        ]
    )
    turn = asyncio.create_task(agent.run_turn("live", "second question"))
    try:
        await asyncio.wait_for(pause.reached.wait(), BOUND)
        await page.wait_for(
            "document.querySelector('#transcript .msg.draft')?.textContent.includes('streaming so far')",
            timeout=BOUND,
        )
        assert "second question" in await scene.text("#transcript")
        assert await scene.count(".tl-attempt.status-running") == 1
        await page.wait_for("!document.getElementById('live').hidden", timeout=BOUND)
        await scene.shot("session-live")
    finally:
        pause.go.set()
        await asyncio.wait_for(turn, BOUND)
    await page.wait_for("document.body.dataset.running === '0'", timeout=BOUND)
    assert await scene.count("#transcript .msg.draft") == 0
    assert await scene.count(".tl-turn") == 2
    assert int(await page.evaluate("document.body.dataset.nextSeq")) > before
    assert await scene.count(".tl-attempt.status-running") == 0


async def test_the_demo_sessions_cost_shows_in_the_list_and_on_its_page(tmp_path: Path) -> None:
    """Issue 30: the inspector shows the cost the meter (and `sessions usage`) gives the demo's
    session, in the list's cost cell and the session's summary, instead of "—"."""
    binary = _chromium()
    db = tmp_path / "demo.db"
    demo = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "modelwire", "demo", "--delay-ms", "0", "--log", str(db),
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        env={**os.environ, "HOME": str(tmp_path), "XDG_DATA_HOME": str(tmp_path / "data")},
    )  # fmt: skip
    out, err = await asyncio.wait_for(demo.communicate(), 120)
    assert demo.returncode == 0, out.decode() + err.decode()
    log = await open_log(f"sqlite:///{db}")
    try:
        (info,) = await log.sessions()
        cost = TokenMeter.project(await log.read(info.session_id)).cost
        assert cost is not None and cost > 0
        server = await serve(log, poll_interval=0.05)
        try:
            async with launch(binary) as browser:
                page = await browser.new_page()
                await page.goto(server.url)
                await page.wait_for("document.body.dataset.loaded", timeout=BOUND)
                # fmtCost: two significant digits below $0.01 ($0.0000783552 -> $0.000078)
                shown = await page.evaluate(f"'$' + Number('{cost}').toPrecision(2)")
                assert shown == "$0.000078", shown
                row = "#sessions tbody tr td:nth-child(8)"
                await page.wait_for(
                    f"document.querySelector({json.dumps(row)}).textContent === '{shown}'",
                    timeout=BOUND,
                )
                await page.goto(server.url.rstrip("/") + f"/session?id={info.session_id}")
                await page.wait_for("document.body.dataset.loaded", timeout=BOUND)
                stat = "[...document.querySelectorAll('#summary .stat')].find(s => s.textContent.endsWith('cost'))"
                assert await page.evaluate(f"{stat}.querySelector('.stat-value').textContent") == (
                    shown
                )
                assert page.exceptions == [], page.exceptions
        finally:
            await server.close()
    finally:
        await log.close()


STOP = Finish(Stop())
NESTED = {
    "one line": "> " * 50_000 + "the bottom",
    "a line per level": "\n".join(">" * depth + f" level {depth}" for depth in range(1, 450)),
    "a list per level": "\n".join("  " * depth + f"- item {depth}" for depth in range(300)),
    "emphasis": "*_" * 1000 + "core" + "_*" * 1000,
}


async def test_deeply_nested_markdown_renders_with_its_nesting_capped(scene: Scene) -> None:
    rig = rig_for(scene.log, scene.clock)
    agent = rig.agent()
    for name, answer in NESTED.items():
        rig.adapter.scripts.append(  # one delta: the answer's size is the point, not its pace
            [BlockStart(0, "text"), TextDelta(0, answer), BlockEnd(0, TextBlock(answer)), STOP]
        )
        result = await agent.run_turn("nested", f"nest {name}")
        assert result.reason.kind == "completed", name
    assert len(NESTED["one line"]) >= 100_000
    await scene.open("/session?id=nested")
    page = scene.page
    await page.wait_for("document.querySelectorAll('#transcript .msg').length >= 8", timeout=BOUND)
    assert await scene.count("#error:not([hidden])") == 0
    depth = """(() => { let most = 0;
        for (const node of document.querySelectorAll('#transcript *')) {
          let d = 0; for (let n = node; n; n = n.parentElement) d++; most = Math.max(most, d); }
        return most; })()"""
    assert int(await page.evaluate(depth)) < 80  # capped: the DOM is not 50,000 levels deep
    shown = await scene.text("#transcript")
    for needle in ("the bottom", "level 449", "item 299", "core"):
        assert needle in shown, needle  # nothing past the cap is lost: it shows as text
    assert await scene.count("#transcript blockquote") >= 8
    await scene.shot("session-deeply-nested")
