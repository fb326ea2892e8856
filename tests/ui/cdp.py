"""A minimal Chrome DevTools Protocol client over aiohttp's WebSocket: just what the browser
tests need (launch headless Chromium, open a page, evaluate, click, screenshot).

No selenium or playwright: Chromium from Debian's packages (`/usr/bin/chromium`) is started with
`--remote-debugging-port=0`; the port it picked is read from its `DevToolsActivePort` file.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import itertools
import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any  # DevTools messages are free-form JSON

import aiohttp

FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-extensions",
    "--disable-dev-shm-usage",
    "--hide-scrollbars",
    "--mute-audio",
    "--remote-debugging-port=0",
    "--remote-allow-origins=*",
]


def chromium_path() -> str | None:
    """The Chromium binary: `$MODELWIRE_CHROMIUM` when set (None if it is not a file), else
    /usr/bin/chromium (Debian's package), else one on PATH."""
    chosen = os.environ.get("MODELWIRE_CHROMIUM")
    if chosen:
        return chosen if Path(chosen).is_file() else None
    if Path("/usr/bin/chromium").is_file():
        return "/usr/bin/chromium"
    return shutil.which("chromium") or shutil.which("chromium-browser")


class CdpError(RuntimeError):
    """A DevTools command failed, or the page's script threw."""


class Page:
    """One tab, attached with a flat session over the browser's WebSocket."""

    def __init__(self, browser: Browser, session_id: str) -> None:
        self.browser = browser
        self.session_id = session_id
        self.console: list[str] = []
        self.exceptions: list[str] = []

    async def send(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        return await self.browser.send(method, params, session_id=self.session_id)

    async def goto(self, url: str, *, timeout: float = 20.0) -> None:
        loaded = self.browser.expect("Page.loadEventFired", self.session_id)
        await self.send("Page.navigate", {"url": url})
        await asyncio.wait_for(loaded, timeout)

    async def evaluate(self, expression: str) -> Any:
        reply = await self.send(
            "Runtime.evaluate",
            {"expression": expression, "returnByValue": True, "awaitPromise": True},
        )
        if "exceptionDetails" in reply:
            raise CdpError(f"{expression[:80]}: {json.dumps(reply['exceptionDetails'])[:600]}")
        return reply["result"].get("value")

    async def wait_for(self, expression: str, *, timeout: float = 10.0) -> Any:
        """Poll `expression` until it is truthy (`timeout` is a generous bound, not a measure)."""
        deadline = asyncio.get_running_loop().time() + timeout
        guarded = f"(() => {{ try {{ return ({expression}); }} catch (_) {{ return null; }} }})()"
        while True:
            try:
                value = await self.evaluate(guarded)
            except CdpError:  # the page is navigating: its context is gone for a moment
                value = None
            if value:
                return value
            if asyncio.get_running_loop().time() > deadline:
                raise TimeoutError(f"still false after {timeout} s: {expression}")
            await asyncio.sleep(0.05)

    async def click(self, selector: str) -> None:
        """A real mouse click (press and release) at the centre of the first match."""
        box = await self.evaluate(
            f"(() => {{ const e = document.querySelector({json.dumps(selector)});"
            " if (!e) return null; e.scrollIntoView({block: 'center'});"
            " const r = e.getBoundingClientRect();"
            " return {x: r.left + r.width / 2, y: r.top + r.height / 2}; })()"
        )
        if box is None:
            raise CdpError(f"nothing matches {selector!r}")
        for kind in ("mousePressed", "mouseReleased"):
            await self.send(
                "Input.dispatchMouseEvent",
                {"type": kind, "x": box["x"], "y": box["y"], "button": "left", "clickCount": 1},
            )

    async def screenshot(self, path: Path) -> bytes:
        reply = await self.send("Page.captureScreenshot", {"format": "png"})
        data = base64.b64decode(reply["data"])
        path.write_bytes(data)
        return data


class Browser:
    """A headless Chromium process and its DevTools WebSocket."""

    def __init__(
        self, process: subprocess.Popen[bytes], ws: aiohttp.ClientWebSocketResponse
    ) -> None:
        self.process = process
        self.ws = ws
        self._ids = itertools.count(1)
        self._pending: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self._waiters: list[tuple[str, str | None, asyncio.Future[dict[str, Any]]]] = []
        self.pages: dict[str, Page] = {}
        self._reader = asyncio.create_task(self._read())

    async def _read(self) -> None:
        async for message in self.ws:
            if message.type != aiohttp.WSMsgType.TEXT:
                break
            data = json.loads(message.data)
            if "id" in data:
                future = self._pending.pop(data["id"], None)
                if future is not None and not future.done():
                    if "error" in data:
                        future.set_exception(CdpError(json.dumps(data["error"])))
                    else:
                        future.set_result(data.get("result", {}))
                continue
            method, session = data.get("method"), data.get("sessionId")
            page = self.pages.get(session or "")
            if page is not None and method == "Runtime.consoleAPICalled":
                page.console.append(
                    " ".join(str(a.get("value", "")) for a in data["params"]["args"])
                )
            if page is not None and method == "Runtime.exceptionThrown":
                page.exceptions.append(json.dumps(data["params"]["exceptionDetails"])[:800])
            for waiter in list(self._waiters):
                name, wanted, future = waiter
                if name == method and wanted in (None, session) and not future.done():
                    future.set_result(data.get("params", {}))
                    self._waiters.remove(waiter)

    def expect(self, method: str, session_id: str | None = None) -> asyncio.Future[dict[str, Any]]:
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._waiters.append((method, session_id, future))
        return future

    async def send(
        self, method: str, params: dict[str, Any] | None = None, *, session_id: str | None = None
    ) -> dict[str, Any]:
        ident = next(self._ids)
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._pending[ident] = future
        message: dict[str, Any] = {"id": ident, "method": method, "params": params or {}}
        if session_id is not None:
            message["sessionId"] = session_id
        await self.ws.send_str(json.dumps(message))
        return await asyncio.wait_for(future, 30)

    async def new_page(self, width: int = 1400, height: int = 1000) -> Page:
        target = await self.send("Target.createTarget", {"url": "about:blank"})
        attached = await self.send(
            "Target.attachToTarget", {"targetId": target["targetId"], "flatten": True}
        )
        page = Page(self, attached["sessionId"])
        self.pages[page.session_id] = page
        for domain in ("Page.enable", "Runtime.enable"):
            await page.send(domain)
        await page.send(
            "Emulation.setDeviceMetricsOverride",
            {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False},
        )
        return page


@contextlib.asynccontextmanager
async def launch(binary: str) -> AsyncIterator[Browser]:
    """Start headless Chromium with a throwaway profile; yields the connected `Browser`."""
    profile = tempfile.mkdtemp(prefix="modelwire-chromium-")
    process = subprocess.Popen(
        [binary, *FLAGS, f"--user-data-dir={profile}", "about:blank"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    session = aiohttp.ClientSession()
    try:
        port_file = Path(profile) / "DevToolsActivePort"
        for _ in range(400):
            if port_file.exists() and port_file.read_text().count("\n") >= 1:
                break
            if process.poll() is not None:
                raise CdpError(f"chromium exited with status {process.returncode}")
            await asyncio.sleep(0.05)
        else:
            raise CdpError("chromium did not open its DevTools port within 20 s")
        port, path = port_file.read_text().split("\n")[:2]
        ws = await session.ws_connect(f"ws://127.0.0.1:{port}{path}", max_msg_size=64 * 2**20)
        browser = Browser(process, ws)
        try:
            yield browser
        finally:
            browser._reader.cancel()
            await ws.close()
    finally:
        await session.close()
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        shutil.rmtree(profile, ignore_errors=True)
