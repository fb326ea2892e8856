"""The live session of one MCP server, owned by one long-lived task.

The SDK's client is a stack of anyio context managers (the transport, the session's task group)
that must be entered and left by the same task: entering them in one task and leaving them in
another is the cancel-scope error that fails tool calls in other MCP clients. So each session
lives in its own task (`_own`): it enters the client, lists the tools, then waits — for a
`tools/list_changed` (a notification on a 2025-era connection, a `subscriptions/listen` event on
a 2026 one: the tools are listed again), for the transport's end (a stdio server whose process
exited: its stdout reached EOF; an HTTP transport that failed) or for `aclose()` — and leaves
the client itself. That task is cancelled only through its own anyio cancel scope, so the SDK's
shielded shutdown (close stdin, wait, kill the process tree) always runs to its end. Tool calls
come from the turns' tasks: they send a request on the session and await its answer, which any
task may do; cancelling one (a tool timeout) abandons that request only (the SDK tells the server
with `notifications/cancelled`).

Start-up — spawn or connect, handshake, first listing — is bounded by `timeout_ms`, measured by
the opener's `sleep` (the agent's, so tests pass a clock): a deadline task cancels the owner's
scope, and `open()` fails once the owner has left the client (the process reaped). A server that
went away is started again by the next call, never by the call it went away during: that call
may have run, so it fails with `MCP`, naming the server and what failed.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from typing import Final

import anyio
import mcp_types as types
from mcp import Client
from mcp.client.session import IncomingMessage
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from ..agent.wait import Sleep
from ..errors import ErrorCode, HarnessError
from ..vocab import JsonValue
from ._problems import call_failure, connection_closed, start_failure
from ._secrets import scrub
from ._spec import Spec
from ._transport import client_for

__all__ = ["Connection"]

_LOG: Final = logging.getLogger("modelwire.mcp")
_MAX_PAGES: Final = 100
_STOP_S: Final = 15.0
"""How long `aclose()` waits for the SDK's bounded shutdown before abandoning the session."""
_CALL_MARGIN_S: Final = 1.0
"""The SDK's own timeout of a call trails the agent's, so the agent's `TOOL_TIMEOUT` comes first."""

Listing = Callable[[Sequence[types.Tool]], None]


def _retrieve(future: asyncio.Future[None]) -> None:
    if not future.cancelled():
        future.exception()  # a start nobody awaits any more must not warn at collection


class Connection:
    """One MCP server's session (see the module docstring); `on_listing` receives each listing."""

    def __init__(self, name: str, spec: Spec, timeout_ms: float, on_listing: Listing) -> None:
        self._name = name
        self._spec = spec
        self._timeout_ms = timeout_ms
        self._on_listing = on_listing
        self._sleep: Sleep = asyncio.sleep
        self._loop: asyncio.AbstractEventLoop | None = None
        self._owner: asyncio.Task[None] | None = None
        self._ready: asyncio.Future[None] | None = None
        self._scope: anyio.CancelScope | None = None
        self._client: Client | None = None
        self._wake = asyncio.Event()
        self._ended = False  # the transport of the current session ended
        self._stopping = False
        self._changed = False  # a tools/list_changed came: list again
        self._relisting = False  # from that notification until the new listing is in
        self._listed = asyncio.Event()  # set (and replaced) by every listing
        self._timed_out = False
        self._closed = True  # nothing restarts a server that was never opened or was closed
        self._secrets: tuple[str, ...] = ()

    @property
    def spec(self) -> Spec:
        """How the server is reached."""
        return self._spec

    @property
    def running(self) -> bool:
        """A session is up (started, not ended, not stopping)."""
        return self._client is not None and not self._ended and not self._stopping

    def failure(self, what: str, code: str = ErrorCode.MCP) -> HarnessError:
        """A `HarnessError` naming the server and its transport, secrets masked."""
        text = f"MCP server {self._name!r} ({self._spec.target}) {what}"
        return HarnessError(scrub(text, self._secrets), code)

    # ---- start and stop ------------------------------------------------------------------------

    async def open(self, sleep: Sleep | None) -> bool:
        """Start the session unless it runs; True when this call started it."""
        self._bind_loop()
        if sleep is not None:
            self._sleep = sleep
        self._closed = False
        if self.running:
            return False
        ready = self._ready
        if ready is not None and not ready.done():
            await asyncio.shield(ready)
            return False
        owner = self._owner
        if owner is not None and not owner.done():  # the last session is still shutting down
            await asyncio.wait({owner})
        await asyncio.shield(self._start())
        return True

    def _start(self) -> asyncio.Future[None]:
        loop = asyncio.get_running_loop()
        ready: asyncio.Future[None] = loop.create_future()
        ready.add_done_callback(_retrieve)
        self._ready, self._wake, self._listed = ready, asyncio.Event(), asyncio.Event()
        self._ended = self._stopping = self._changed = self._timed_out = False
        self._relisting = False
        owner = loop.create_task(self._own(ready), name=f"mcp-server-{self._name}")
        self._owner = owner
        deadline = loop.create_task(self._deadline(ready))
        ready.add_done_callback(lambda _: deadline.cancel())
        return ready

    async def _deadline(self, ready: asyncio.Future[None]) -> None:
        await self._sleep(self._timeout_ms / 1000.0)
        if not ready.done():
            self._timed_out = True  # `_own` cancels its scope on entry if it is not there yet
            if self._scope is not None:
                self._scope.cancel()

    async def aclose(self) -> None:
        """Stop the session (bounded) and keep it stopped until the next `open()`."""
        self._closed = True
        owner = self._owner
        if owner is None or owner.done():
            return
        self._stopping = True
        if self._client is None and self._scope is not None:  # still starting
            self._scope.cancel()
        self._wake.set()
        done, _ = await asyncio.wait({owner}, timeout=_STOP_S)
        if not done:  # the SDK's shutdown is bounded; this only guards against a wedged loop
            owner.cancel()
            await asyncio.wait({owner}, timeout=_STOP_S)

    def _bind_loop(self) -> None:
        loop = asyncio.get_running_loop()
        if self._loop is not None and self._loop is not loop:
            if not self._loop.is_closed() and self._owner is not None and not self._owner.done():
                raise self.failure(
                    "runs on another event loop: use one MCPServer object per loop",
                    ErrorCode.INVALID_ARGS,
                )
            self._owner = self._ready = self._client = self._scope = None  # its loop is gone
        self._loop = loop

    # ---- the owner task ------------------------------------------------------------------------

    async def _own(self, ready: asyncio.Future[None]) -> None:
        """Enter the client, list, serve until stopped or ended, leave (see the module doc)."""
        failure: HarnessError | None = None
        with anyio.CancelScope() as scope:
            self._scope = scope
            if self._timed_out:
                scope.cancel()
            try:
                await self._session(ready)
            except Exception as exc:
                if not ready.done():
                    failure = start_failure(self, exc)
                else:
                    _LOG.info("MCP server %r: session ended: %s", self._name, type(exc).__name__)
        self._client = self._scope = None
        if not ready.done():
            if failure is None and self._timed_out:
                failure = self.failure(
                    f"did not start within {self._timeout_ms:g} ms (no answer to the MCP handshake)"
                )
            ready.set_exception(failure or self.failure("was closed while starting"))

    async def _session(self, ready: asyncio.Future[None]) -> None:
        resolved = self._spec.resolved(self._name)
        self._secrets = tuple(resolved.values()) if resolved else ()
        client = client_for(
            self._spec,
            resolved,
            self._timeout_ms / 1000.0,
            on_end=self._end,
            on_message=self._message,
        )
        async with client:
            listed = await self._listing(client)
            self._client = client
            self._apply(listed)
            ready.set_result(None)
            async with anyio.create_task_group() as group:
                if self._modern(client):
                    group.start_soon(self._listen, client)
                while not (self._stopping or self._ended):
                    await self._wake.wait()
                    self._wake.clear()
                    if self._changed and not (self._stopping or self._ended):
                        self._changed = False
                        await self._refresh(client)
                group.cancel_scope.cancel()

    def _end(self) -> None:
        self._ended = True
        self._relisting = False
        self._wake.set()

    def _list_changed(self) -> None:
        self._changed = self._relisting = True
        self._wake.set()

    def _apply(self, listed: Sequence[types.Tool] | None) -> None:
        """Hand a listing on (None: the listing failed) and wake whoever waits for one."""
        if listed is not None:
            self._on_listing(listed)
        self._relisting = False
        event, self._listed = self._listed, asyncio.Event()
        event.set()

    async def _message(self, message: IncomingMessage) -> None:
        """The session's notifications: a 2025-era `tools/list_changed` lists the tools again."""
        if isinstance(message, types.ToolListChangedNotification):
            self._list_changed()

    async def settled(self) -> None:
        """Return once the listing a `tools/list_changed` asked for is in (at once when none is
        pending; at most `timeout_ms`: then the last listing stands)."""
        if self._relisting:
            await self.next_listing()

    async def next_listing(self) -> None:
        """Wait for the next listing (at most `timeout_ms`)."""
        event = self._listed
        try:
            async with asyncio.timeout(self._timeout_ms / 1000.0):
                await event.wait()
        except TimeoutError:
            return

    def _modern(self, client: Client) -> bool:
        tools = client.server_capabilities.tools
        return (
            client.protocol_version in MODERN_PROTOCOL_VERSIONS
            and tools is not None
            and bool(tools.list_changed)
        )

    async def _listen(self, client: Client) -> None:
        """A 2026 connection's `tools/list_changed` events (`subscriptions/listen`)."""
        try:
            async with client.listen(tools_list_changed=True) as events:
                if not events.honored.tools_list_changed:
                    return
                async for _ in events:
                    self._list_changed()
        except Exception as exc:  # the list then changes only on a restart: say so, go on
            _LOG.info("MCP server %r: no tools/list_changed events: %s", self._name, exc)

    async def _listing(self, client: Client) -> list[types.Tool]:
        tools: list[types.Tool] = []
        cursor: str | None = None
        for _ in range(_MAX_PAGES):
            page = await client.list_tools(cursor=cursor)
            tools.extend(page.tools)
            cursor = page.next_cursor
            if cursor is None:
                return tools
        raise self.failure(f"lists more than {_MAX_PAGES} pages of tools")

    async def _refresh(self, client: Client) -> None:
        try:
            listed = await self._listing(client)
        except Exception as exc:  # keep the last listing; a dead server is noticed by its end
            _LOG.warning("MCP server %r: listing its changed tools failed: %s", self._name, exc)
            listed = None
        self._apply(listed)

    # ---- calls ---------------------------------------------------------------------------------

    async def call(
        self, tool: str, arguments: dict[str, JsonValue], timeout_ms: float
    ) -> types.CallToolResult:
        """`tools/call` on the live session (restarting a server that went away since)."""
        client = await self._live()
        try:
            return await client.call_tool(
                tool, arguments, read_timeout_seconds=timeout_ms / 1000.0 + _CALL_MARGIN_S
            )
        except Exception as exc:
            if connection_closed(exc):  # the session is over: the next call starts another
                self._end()
            raise call_failure(self, tool, timeout_ms, exc) from None

    async def _live(self) -> Client:
        self._bind_loop()
        client = self._client
        if client is not None and self.running:
            return client
        if self._closed:
            raise self.failure("is stopped (its agent or owner closed it)")
        await self.open(None)
        client = self._client
        if client is None:  # stopped again meanwhile
            raise self.failure("is stopped (its agent or owner closed it)")
        return client
