"""Running the gateway: `serve()` until SIGTERM or SIGINT, then a graceful shutdown.

On the signal the process stops accepting connections (the listening socket closes), `/healthz`
answers 503 to a load balancer that still asks, running requests and streams get the grace
period (`[gateway] grace_ms`, or `grace_ms=`) to finish, and whatever still runs after it is
cancelled — its upstream call with it, its turn logged as aborted. A second signal skips the
wait. The runtime is instrumented (`modelwire.telemetry`): with OpenTelemetry installed and
configured, each upstream call is a span. The access log names method, path (never the query string: a misplaced key must not reach
a log line), status and duration; it never logs headers.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import sys
from collections.abc import Callable, Mapping

from aiohttp import web
from aiohttp.abc import AbstractAccessLogger

from .app import create_app
from .handlers import GATEWAY, GRACE_MS

__all__ = ["AccessLogger", "serve"]


class AccessLogger(AbstractAccessLogger):
    """One line per request: method, path without its query, status, seconds."""

    def log(self, request: web.BaseRequest, response: web.StreamResponse, time: float) -> None:
        self.logger.info("%s %s %s %.3fs", request.method, request.path, response.status, time)


def _say(line: str) -> None:
    sys.stderr.write(line + "\n")
    sys.stderr.flush()


async def serve(
    config: str | os.PathLike[str] | Mapping[str, object] | None,
    log: str,
    *,
    host: str = "127.0.0.1",
    port: int = 4000,
    grace_ms: int | None = None,
    say: Callable[[str], None] = _say,
    agents: Mapping[str, object] | None = None,
) -> int:
    """Serve the gateway on `host:port` until a signal (module docstring); returns 0."""
    from ..session.urls import redact_url

    app = create_app(config, log, agents, telemetry=True)
    logging.getLogger("aiohttp.access").setLevel(logging.INFO)
    grace_s = (grace_ms if grace_ms is not None else _grace(app)) / 1000
    runner = web.AppRunner(
        app, handler_cancellation=True, shutdown_timeout=grace_s, access_log_class=AccessLogger
    )
    await runner.setup()
    site = web.TCPSite(runner, host, port)
    await site.start()
    bound = runner.addresses[0][1] if runner.addresses else port
    say(f"modelwire serve: listening on http://{host}:{bound} (log {redact_url(log)})")
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    signals = (signal.SIGTERM, signal.SIGINT)
    for sig in signals:
        loop.add_signal_handler(sig, stop.set)
    try:
        await stop.wait()
        say(f"modelwire serve: stopping; running requests get {grace_s:g}s to finish")
        app[GATEWAY].draining = True
        stop.clear()
        cleanup = asyncio.ensure_future(runner.cleanup())
        again = asyncio.ensure_future(stop.wait())
        await asyncio.wait((cleanup, again), return_when=asyncio.FIRST_COMPLETED)
        if not cleanup.done():
            say("modelwire serve: second signal, stopping now")
            cleanup.cancel()
        again.cancel()
    finally:
        for sig in signals:
            loop.remove_signal_handler(sig)
    say("modelwire serve: stopped")
    return 0


def _grace(app: web.Application) -> int:
    return app[GRACE_MS]
