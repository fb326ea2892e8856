"""`serve(log)`: run the inspector on a local port; `UiServer` is the running handle.

Bound to 127.0.0.1 unless told otherwise; any other address is refused without
`allow_remote=True` (the page shows every message of every session in the log). The `Host`
check stays on either way; `allowed_hosts` names what else it answers to.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable
from types import TracebackType
from typing import Self

from aiohttp import web

from ..errors import ErrorCode, HarnessError
from ..session import SessionLog, open_log
from .app import DEFAULT_POLL_INTERVAL, create_app
from .guard import allowed_host_name, is_loopback_host

__all__ = ["UiServer", "serve", "server_url"]


def server_url(host: str, port: int) -> str:
    """`http://host:port/`, with an IPv6 address in brackets."""
    try:
        shown = f"[{host}]" if ipaddress.ip_address(host).version == 6 else host
    except ValueError:
        shown = host
    return f"http://{shown}:{port}/"


class UiServer:
    """A running inspector: `url`, `host`, `port`, `app`; `await close()` stops it.

    A log opened by `serve` from a URL is closed with the server; a log object passed in is not.
    """

    def __init__(
        self, runner: web.AppRunner, log: SessionLog, *, host: str, port: int, owns_log: bool
    ) -> None:
        self._runner = runner
        self._log = log
        self._owns_log = owns_log
        self.host = host
        self.port = port
        self.url = server_url(host, port)
        self.app = runner.app

    @property
    def log(self) -> SessionLog:
        """The log being served."""
        return self._log

    async def close(self) -> None:
        """Stop serving (live streams end), then close the log if `serve` opened it."""
        try:
            await self._runner.cleanup()
        finally:
            if self._owns_log:
                await self._log.close()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()


async def serve(
    log_url: str | SessionLog,
    host: str = "127.0.0.1",
    port: int = 0,
    *,
    allow_remote: bool = False,
    allowed_hosts: Iterable[str] = (),
    poll_interval: float = DEFAULT_POLL_INTERVAL,
) -> UiServer:
    """Serve the inspector of `log_url` (a URL, or an open `SessionLog`) on `host:port`.

    `port=0` picks a free port (read it from `.port` / `.url`). A host that is not loopback
    raises `HarnessError` `INVALID_ARGS` unless `allow_remote=True`. Requests are answered only
    when their `Host` is a loopback name, one of `allowed_hosts` (the names a remote deployment
    is reached by; a malformed one is `INVALID_ARGS`) or, with `allow_remote`, an IP address
    (DNS rebinding: `modelwire.ui.guard`). An address already in use raises `OSError`.
    """
    allowed = tuple(allowed_host_name(name) for name in allowed_hosts)
    remote = not is_loopback_host(host)
    if remote and not allow_remote:
        raise HarnessError(
            f"refusing to serve the session log on {host!r}: it is not a loopback address and "
            "the page shows every message in the log (pass allow_remote=True / --allow-remote)",
            ErrorCode.INVALID_ARGS,
        )
    owns = isinstance(log_url, str)
    log = await open_log(log_url) if isinstance(log_url, str) else log_url
    try:
        app = create_app(
            log, poll_interval=poll_interval, allowed_hosts=allowed, address_hosts=remote
        )
        runner = web.AppRunner(app, access_log=None, shutdown_timeout=2.0)
        await runner.setup()
        try:
            site = web.TCPSite(runner, host, port)
            await site.start()
        except BaseException:
            await runner.cleanup()
            raise
    except BaseException:
        if owns:
            await log.close()
        raise
    bound = runner.addresses[0]
    return UiServer(runner, log, host=host, port=int(bound[1]), owns_log=owns)
