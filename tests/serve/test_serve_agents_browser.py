"""Issue 37: the `examples/web-chat/` page in headless Chromium against the agent endpoints — send,
stream, reload mid-answer and see the answer go on (from the log) to its end, once.

The page's bundle is built by esbuild from `examples/web-chat/chat.mjs` with the `ai` package of
`tests/serve/web` (`npm ci` there, as `.ci/run` does). Without Chromium the test skips, except
under CI (`CI=true`), where it fails."""

from __future__ import annotations

import asyncio
import importlib.util
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest
from providers_fixtures import start_site
from web_helpers import WEB, WebModel, make_factory, node_ready

sys.path.insert(0, str(Path(__file__).parents[1] / "ui"))
from cdp import chromium_path, launch

EXAMPLE = Path(__file__).parents[2] / "examples" / "web-chat"
BOUND = 30.0
"""Seconds the page may take to show something (a generous hang guard, not a measure)."""


def _chromium() -> str:
    found = chromium_path()
    if found is None:
        if os.environ.get("CI") == "true":
            pytest.fail("CI=true but Chromium is missing: .ci/run installs it")
        pytest.skip("Chromium is not installed (apt-get install chromium)")
    return found


def _example_server() -> ModuleType:
    spec = importlib.util.spec_from_file_location("web_chat_server", EXAMPLE / "server.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _bundle(out: Path) -> Path:
    node_ready()
    target = out / "chat.js"
    esbuild = WEB / "node_modules" / ".bin" / "esbuild"
    subprocess.run(
        [
            str(esbuild),
            str(EXAMPLE / "chat.mjs"),
            "--bundle",
            "--format=esm",
            "--target=es2022",
            f"--outfile={target}",
            "--log-level=warning",
        ],
        check=True,
        env={**os.environ, "NODE_PATH": str(WEB / "node_modules")},
        timeout=120,
    )
    return target


@pytest.fixture(autouse=True)
def _counter(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("APPROVAL_COUNTER", str(tmp_path / "ran.txt"))


async def test_the_example_page_streams_and_goes_on_after_a_reload_mid_answer(
    tmp_path: Path,
) -> None:
    binary = _chromium()
    bundle = _bundle(tmp_path)
    model = WebModel()
    await model.start()
    model.hold = True
    app = _example_server().make_app(make_factory(model.base_url), bundle=bundle)
    runner, url = await start_site(app)
    try:
        async with launch(binary) as browser:
            page = await browser.new_page()
            await page.goto(url + "/")
            await page.wait_for("document.body.dataset.status === 'ready'", timeout=BOUND)
            await page.evaluate("document.getElementById('input').value = 'red green blue'")
            await page.click("#send")
            first = ".assistant .text"
            await page.wait_for(
                f"document.querySelector('{first}')?.textContent === 'echo'", timeout=BOUND
            )
            await asyncio.wait_for(model.holding.wait(), BOUND)
            await page.goto(url + "/")  # the reload, mid-answer: the turn goes on in the server
            await page.wait_for(
                f"document.querySelector('{first}')?.textContent === 'echo'", timeout=BOUND
            )
            assert await page.evaluate("document.body.dataset.status") == "streaming"
            model.release.set()
            await page.wait_for("document.body.dataset.status === 'ready'", timeout=BOUND)
            texts = await page.evaluate(
                "[...document.querySelectorAll('.msg')].map(m => [m.className, m.textContent])"
            )
            assert texts == [
                ["msg user", "red green blue"],
                ["msg assistant", "thinkingecho red green blue"],
            ]
            assert page.exceptions == []
            # the next turn after the reload: the history the page kept matches the log
            await page.evaluate("document.getElementById('input').value = 'again'")
            await page.click("#send")
            await page.wait_for(
                "document.querySelectorAll('.assistant').length === 2"
                " && document.body.dataset.status === 'ready'",
                timeout=BOUND,
            )
            last = await page.evaluate(
                "[...document.querySelectorAll('.assistant .text')].pop().textContent"
            )
            assert last == "echo again"
    finally:
        await runner.cleanup()
        await model.stop()
