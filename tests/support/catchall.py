"""Start an `aiohttp.web` app on 127.0.0.1 (a free port) whose one handler answers every method
and path: the test servers' shared start-up."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from aiohttp import web

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


async def serve_all(handler: Handler) -> tuple[web.AppRunner, str]:
    """The running app's runner (`await runner.cleanup()` to stop it) and its base URL."""
    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", handler)
    runner = web.AppRunner(app, handle_signals=False)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    return runner, f"http://127.0.0.1:{port}"
