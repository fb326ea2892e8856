"""The agent's tools and the tools of its MCP servers, as one mapping read afresh per request.

A `ToolSource` (structurally: `modelwire.mcp.MCPServer`) brings tools the agent does not define
itself. They are known once the source is open and may change while it is (a server's
`tools/list_changed`), so the `ToolBox` — the one name → `Tool` mapping a turn's Steps use —
rebuilds its view whenever a source's `revision` moves: every request offers what the sources
list at that moment, and a call finds the tool its request offered. A name two tools share is
refused with `INVALID_CONFIG` naming both: at construction for what is known then (a server
already open), else when the tools become known (the first request, `async with agent`).

`ready()`, before every request, opens the sources not opened yet, concurrently (so a source
that cannot start ends that turn with its `MCP` failure, the user's message kept in the log, and
the next turn tries again), and waits for a listing an open source announced but has not
finished (`settled`), so a tool a server added during a call is offered by the next request.
`aclose()` closes only the sources a `ready()` of this box started: a source the caller opened,
perhaps for several agents, stays the caller's.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Protocol, runtime_checkable

from ..errors import ErrorCode, HarnessError
from ..vocab import ToolSchema
from .tools import Tool
from .wait import Sleep

__all__ = ["ToolBox", "ToolSource"]


@runtime_checkable
class ToolSource(Protocol):
    """Tools from outside the agent: an MCP server (`modelwire.mcp.MCPServer`)."""

    @property
    def name(self) -> str:
        """The source's name (the prefix of its tools' names)."""
        ...

    @property
    def tools(self) -> Sequence[Tool]:
        """Its tools as last listed (none before it is open)."""
        ...

    @property
    def revision(self) -> int:
        """A number that changes whenever `tools` does."""
        ...

    async def open(self, sleep: Sleep | None = None) -> bool:
        """Start it unless it runs (timeouts measured by `sleep`); True when this call started
        it. A source that cannot start raises `HarnessError` (code `MCP`)."""
        ...

    async def settled(self) -> None:
        """Return once a change of `tools` it announced is in (bounded)."""
        ...

    async def aclose(self) -> None:
        """Stop it (bounded; nothing it started outlives this)."""
        ...


class ToolBox(Mapping[str, Tool]):
    """The agent's own tools, then each source's, by name (see the module docstring)."""

    __slots__ = ("_key", "_local", "_owned", "_pending", "_schemas", "_sleep", "_sources", "_tools")

    def __init__(self, local: Mapping[str, Tool], sources: Iterable[object], sleep: Sleep) -> None:
        self._local = dict(local)
        self._sources = _checked(sources)
        self._pending: set[int] = set(range(len(self._sources)))  # indexes not opened here yet
        self._owned: list[ToolSource] = []
        self._sleep = sleep
        self._key: tuple[int, ...] | None = None
        self._tools = self._local
        self._schemas = tuple(tool.schema for tool in self._local.values())
        self._current()  # a clash with an already open source is refused now

    @property
    def schemas(self) -> tuple[ToolSchema, ...]:
        """The schemas a request offers: the agent's own tools, then each source's."""
        self._current()
        return self._schemas

    def __getitem__(self, name: str) -> Tool:
        return self._current()[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._current())

    def __len__(self) -> int:
        return len(self._current())

    async def ready(self) -> None:
        """Open the sources this box has not opened yet, concurrently, and let the others finish
        a listing they announced (`settled`). Failures are raised together, as one
        `HarnessError` with the first one's code; a failed source is tried again by the next
        call."""
        for index, source in enumerate(self._sources):
            if index not in self._pending:
                await source.settled()
        if not self._pending:
            return
        waiting = sorted(self._pending)
        results = await asyncio.gather(
            *(self._sources[i].open(self._sleep) for i in waiting), return_exceptions=True
        )
        errors: list[HarnessError] = []
        for index, result in zip(waiting, results, strict=True):
            if isinstance(result, HarnessError):
                errors.append(result)
            elif isinstance(result, BaseException):
                raise result
            elif index in self._pending:
                self._pending.discard(index)
                if result:
                    self._owned.append(self._sources[index])
        if len(errors) == 1:
            raise errors[0]
        if errors:
            raise HarnessError("; ".join(e.message for e in errors), errors[0].code)
        self._current()

    async def aclose(self) -> None:
        """Close the sources `ready()` started, last opened first."""
        owned, self._owned = self._owned, []
        self._pending = set(range(len(self._sources)))
        for source in reversed(owned):
            await source.aclose()

    def _current(self) -> dict[str, Tool]:
        if not self._sources:
            return self._tools
        key = tuple(source.revision for source in self._sources)
        if key != self._key:
            self._tools, self._schemas = _joined(self._local, self._sources)
            self._key = key
        return self._tools


def _checked(sources: Iterable[object]) -> tuple[ToolSource, ...]:
    out: list[ToolSource] = []
    names: set[str] = set()
    for source in sources:
        if not isinstance(source, ToolSource):
            raise HarnessError(
                f"mcp_servers holds {type(source).__name__!r}, not an MCP server "
                "(modelwire.mcp.MCPServer.stdio(...) or .http(...))",
                ErrorCode.INVALID_CONFIG,
            )
        if source.name in names:
            raise HarnessError(
                f"two MCP servers are named {source.name!r}: pass name=... to tell them apart "
                "(their tools are named <server>_<tool>)",
                ErrorCode.INVALID_CONFIG,
            )
        names.add(source.name)
        out.append(source)
    return tuple(out)


def _joined(
    local: Mapping[str, Tool], sources: Sequence[ToolSource]
) -> tuple[dict[str, Tool], tuple[ToolSchema, ...]]:
    tools = dict(local)
    for source in sources:
        for tool in source.tools:
            other = tools.get(tool.name)
            if other is not None:
                raise HarnessError(
                    f"tool name {tool.name!r} is taken twice: by {_whose(other)} and by a tool "
                    f"of MCP server {source.name!r}; rename the local tool or give the server "
                    "another name (name=...)",
                    ErrorCode.INVALID_CONFIG,
                )
            tools[tool.name] = tool
    return tools, tuple(tool.schema for tool in tools.values())


def _whose(tool: Tool) -> str:
    if tool.server is None:
        return f"the local tool {tool.name!r}"
    return f"a tool of MCP server {tool.server!r}"
