"""`MCPServer`: one Model Context Protocol server whose tools an agent can call.

Declared by `MCPServer.stdio(command, args)` (a child process spoken to over its stdin and
stdout), `MCPServer.http(url)` (streamable HTTP) or `MCPServer.sse(url)` (the legacy HTTP+SSE
transport); every option is checked there (`INVALID_CONFIG` naming it). Nothing starts then and
the SDK is not imported: `open()` — the agent's first request, `async with agent` or
`async with server` — starts the session (`_connection.py`) and lists the tools, which become
agent `Tool`s named `<name>_<tool>` (`_tools.py`). A server that exits is started again by the
next call; `aclose()` stops it (bounded) and leaves no child process or task behind.

Its `env` and `headers` values are secrets (`${NAME}` references resolved at start,
`_secrets.py`): the repr shows their names only, and no failure text holds a value.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from os import PathLike
from typing import TYPE_CHECKING, Final

from ..agent import Tool
from ..agent.wait import Sleep
from ..errors import ErrorCode, HarnessError
from ..runtime.sync import on_bridge_exit, on_sync_loop
from ..vocab import JsonValue
from ..vocab.redacted import hidden_env, hidden_headers
from ..wire.settings import TransportSettings
from ._spec import Http, Spec, Stdio, invalid, names

if TYPE_CHECKING:
    from mcp_types import CallToolResult
    from mcp_types import Tool as Listed

    from ._connection import Connection

__all__ = ["MCPServer"]

_NAME: Final = re.compile(r"[A-Za-z0-9_-]{1,40}")
DEFAULT_TIMEOUT_MS: Final = 30_000.0


def _ms(value: object, what: str, *, optional: bool) -> float | None:
    if value is None and optional:
        return None
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or not (math.isfinite(value) and value > 0)
    ):
        kind = "a positive number of milliseconds" + (" or None" if optional else "")
        raise invalid(f"MCPServer {what} must be {kind}, got {value!r}")
    return float(value)


def _tool_set(value: object, what: str) -> bool | frozenset[str]:
    if isinstance(value, bool):
        return value
    return frozenset(names(value, f"MCPServer {what}"))


class MCPServer:
    """An MCP server (see the module docstring); build one with `stdio`, `http` or `sse`.

    `timeout_ms` bounds the start (spawn or connect, handshake, listing) and each request to the
    server; `call_timeout_ms` a tool call (default `timeout_ms`; past it the call is answered
    `TOOL_TIMEOUT`). `idempotent` (True, or the tool names) declares the tools safe to run twice:
    a turn resumed after its process died during such a call runs it again instead of answering
    `TOOL_INTERRUPTED`. `needs_approval` (True, or the tool names) makes a call of those tools
    wait for a person's decision: the turn pauses (`modelwire.agent.approval`).
    """

    __slots__ = (
        "_at_exit",
        "_call_ms",
        "_connection",
        "_idempotent",
        "_name",
        "_needs_approval",
        "_problems",
        "_revision",
        "_spec",
        "_timeout_ms",
        "_tools",
    )

    def __init__(
        self,
        spec: Spec,
        *,
        name: str | None = None,
        needs_approval: bool | Sequence[str] = False,
        timeout_ms: float = DEFAULT_TIMEOUT_MS,
        call_timeout_ms: float | None = None,
        idempotent: bool | Sequence[str] = False,
    ) -> None:
        chosen = spec.default_name if name is None else name
        if not isinstance(chosen, str) or not _NAME.fullmatch(chosen):
            raise invalid(
                f"MCPServer name must be 1-40 characters of A-Z, a-z, 0-9, _ or -, got {chosen!r}"
            )
        timeout = _ms(timeout_ms, "timeout_ms", optional=False)
        assert timeout is not None
        self._spec = spec
        self._name = chosen
        self._timeout_ms = timeout
        self._call_ms = _ms(call_timeout_ms, "call_timeout_ms", optional=True) or timeout
        self._idempotent = _tool_set(idempotent, "idempotent")
        self._needs_approval = _tool_set(needs_approval, "needs_approval")
        self._tools: tuple[Tool, ...] = ()
        self._problems: tuple[str, ...] = ()
        self._revision = 0
        self._connection: Connection | None = None
        self._at_exit = False

    @classmethod
    def stdio(
        cls,
        command: str,
        args: Sequence[str] = (),
        *,
        env: Mapping[str, str] | None = None,
        cwd: str | PathLike[str] | None = None,
        name: str | None = None,
        needs_approval: bool | Sequence[str] = False,
        timeout_ms: float = DEFAULT_TIMEOUT_MS,
        call_timeout_ms: float | None = None,
        idempotent: bool | Sequence[str] = False,
    ) -> MCPServer:
        """A server run as `command args` (a child process in its own process group, with only a
        safe part of this environment — HOME, PATH, … — plus `env`), in `cwd`. `name` defaults
        to the command's file name."""
        return cls(
            Stdio.of(command, args, env, cwd),
            name=name,
            needs_approval=needs_approval,
            timeout_ms=timeout_ms,
            call_timeout_ms=call_timeout_ms,
            idempotent=idempotent,
        )

    @classmethod
    def http(
        cls,
        url: str,
        *,
        headers: Mapping[str, str] | None = None,
        name: str | None = None,
        needs_approval: bool | Sequence[str] = False,
        timeout_ms: float = DEFAULT_TIMEOUT_MS,
        call_timeout_ms: float | None = None,
        idempotent: bool | Sequence[str] = False,
        transport: TransportSettings | None = None,
    ) -> MCPServer:
        """A server at `url` over streamable HTTP, sent `headers` with every request. `name`
        defaults to the URL's host; `transport` (proxy, TLS files, pool, connect timeout) is how
        the library's transport reaches it (default: the environment's proxy settings)."""
        return cls(
            Http.of(url, headers, sse=False, settings=transport),
            name=name,
            needs_approval=needs_approval,
            timeout_ms=timeout_ms,
            call_timeout_ms=call_timeout_ms,
            idempotent=idempotent,
        )

    @classmethod
    def sse(
        cls,
        url: str,
        *,
        headers: Mapping[str, str] | None = None,
        name: str | None = None,
        needs_approval: bool | Sequence[str] = False,
        timeout_ms: float = DEFAULT_TIMEOUT_MS,
        call_timeout_ms: float | None = None,
        idempotent: bool | Sequence[str] = False,
        transport: TransportSettings | None = None,
    ) -> MCPServer:
        """A server at `url` over the legacy HTTP+SSE transport (its SSE endpoint); `transport`
        as for `http`."""
        return cls(
            Http.of(url, headers, sse=True, settings=transport),
            name=name,
            needs_approval=needs_approval,
            timeout_ms=timeout_ms,
            call_timeout_ms=call_timeout_ms,
            idempotent=idempotent,
        )

    # ---- what it is ----------------------------------------------------------------------------

    @property
    def name(self) -> str:
        """The prefix of its tools' names."""
        return self._name

    @property
    def target(self) -> str:
        """Its transport, as messages name it: `stdio: CMD ARGS…` or `http: URL`."""
        return self._spec.target

    @property
    def timeout_ms(self) -> float:
        return self._timeout_ms

    @property
    def call_timeout_ms(self) -> float:
        return self._call_ms

    @property
    def tools(self) -> tuple[Tool, ...]:
        """Its tools as last listed (none before the first start)."""
        return self._tools

    @property
    def problems(self) -> tuple[str, ...]:
        """Why listed tools were left out (an invalid input schema, a repeated name)."""
        return self._problems

    @property
    def revision(self) -> int:
        """Bumped by every listing (a start, a restart, a `tools/list_changed`)."""
        return self._revision

    @property
    def running(self) -> bool:
        """A session is up."""
        return self._connection is not None and self._connection.running

    def __repr__(self) -> str:
        spec = self._spec
        if isinstance(spec, Stdio):
            shown = f"command={spec.command!r}, args={spec.args!r}, env={hidden_env(spec.env)!r}"
        else:
            shown = f"url={spec.url!r}, headers={hidden_headers(spec.headers)!r}"
            shown += ", transport='sse'" if spec.sse else ""
        return f"MCPServer(name={self._name!r}, {shown})"

    # ---- lifecycle -----------------------------------------------------------------------------

    async def open(self, sleep: Sleep | None = None) -> bool:
        """Start the server unless it runs (start-up bounded by `timeout_ms`, measured by
        `sleep`); True when this call started it. A server that cannot start raises
        `HarnessError` `MCP` naming it and what failed."""
        connection = self._live()
        started = await connection.open(sleep)
        if started and on_sync_loop() and not self._at_exit:
            self._at_exit = True
            on_bridge_exit(self.aclose)  # a script's `run_sync` agent: stopped at exit
        return started

    async def settled(self) -> None:
        """Return once a listing asked for by `tools/list_changed` is in (at once when none is
        pending; at most `timeout_ms`). The agent awaits it before each request, so a request
        offers the tools a server announced before it."""
        if self._connection is not None:
            await self._connection.settled()

    async def next_listing(self, after: int) -> int:
        """Wait until a listing newer than revision `after` is in (at most `timeout_ms` per
        listing awaited); the revision then (still `after` when none came)."""
        while self._revision <= after and self._connection is not None:
            revision = self._revision
            await self._connection.next_listing()
            if self._revision == revision:
                break
        return self._revision

    async def aclose(self) -> None:
        """Stop the server (bounded); the next `open()` starts it again."""
        if self._connection is not None:
            await self._connection.aclose()

    async def __aenter__(self) -> MCPServer:
        await self.open()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    def _live(self) -> Connection:
        connection = self._connection
        if connection is None:
            try:
                from ._connection import Connection
            except ModuleNotFoundError as exc:
                raise HarnessError(
                    f"MCP server {self._name!r}: MCP needs the official `mcp` SDK "
                    f"(missing module {exc.name!r}): pip install 'modelwire[mcp]'",
                    ErrorCode.MCP,
                ) from None
            connection = Connection(self._name, self._spec, self._timeout_ms, self._listed)
            self._connection = connection
        return connection

    def _listed(self, listed: Sequence[Listed]) -> None:
        from ._tools import agent_tools

        self._tools, self._problems = agent_tools(
            self._name,
            listed,
            self._call,
            timeout_ms=self._call_ms,
            idempotent=self._idempotent,
            needs_approval=self._needs_approval,
        )
        self._revision += 1

    async def _call(self, tool: str, arguments: dict[str, JsonValue]) -> CallToolResult:
        return await self._live().call(tool, arguments, self._call_ms)
