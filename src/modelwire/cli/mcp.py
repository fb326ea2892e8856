"""`modelwire mcp list`, and the servers `modelwire chat --mcp NAME` offers.

Both read the config file's `[mcp.NAME]` sections (`modelwire.mcp.servers_from_config`; a bad
section is a usage error naming `mcp.NAME.key`). The SDK's own log lines (an HTML answer it could
not parse, say) are kept off the terminal unless `--debug`: what failed is reported by modelwire,
once, naming the server.
"""

from __future__ import annotations

import asyncio
import logging
import sys
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING

import msgspec
from rich.console import Console
from rich.text import Text

from .config import CliConfig, load_config
from .errors import EXIT_FAILURE, fail

if TYPE_CHECKING:
    from ..errors import HarnessError
    from ..mcp import MCPServer

__all__ = ["chosen_servers", "configured_servers", "list_servers", "quiet_sdk_logs", "running"]


def quiet_sdk_logs() -> None:
    """Keep the `mcp` SDK's log records off stderr (modelwire reports what failed itself)."""
    logger = logging.getLogger("mcp")
    if not logger.handlers:
        logger.addHandler(logging.NullHandler())
        logger.propagate = False


def configured_servers(config: CliConfig) -> dict[str, MCPServer]:
    """The servers of `config`'s `[mcp.NAME]` sections (a bad section: usage error)."""
    from ..errors import HarnessError
    from ..mcp import servers_from_config

    try:
        return servers_from_config(config.mcp)
    except HarnessError as exc:
        where = f"config file {config.path}: " if config.path else ""
        fail(f"{where}{exc.message}")


def chosen_servers(config: CliConfig, names: Sequence[str]) -> list[MCPServer]:
    """The servers `--mcp NAME` names (each once, in order); an unknown one is a usage error."""
    if not names:
        return []
    servers = configured_servers(config)
    chosen = []
    for name in dict.fromkeys(names):
        if name not in servers:
            known = ", ".join(servers) or "none"
            where = config.path or "the config file"
            fail(f"no MCP server {name!r} in {where} (add an [mcp.{name}] section; have: {known})")
        chosen.append(servers[name])
    return chosen


@asynccontextmanager
async def running(servers: Sequence[MCPServer]) -> AsyncIterator[None]:
    """`servers` started (at once; the first failure raised, after stopping the rest) for the
    block, and stopped after it."""
    if not servers:
        yield
        return
    quiet_sdk_logs()
    try:
        errors = [e for e in await asyncio.gather(*(_started(s) for s in servers)) if e]
        if errors:
            raise errors[0]
        yield
    finally:
        await asyncio.gather(*(server.aclose() for server in servers))


async def _started(server: MCPServer) -> HarnessError | None:
    from ..errors import HarnessError

    try:
        await server.open()
    except HarnessError as exc:
        return exc
    return None


async def list_servers(*, config_path: str | None, as_json: bool) -> int:
    """Start every configured server at once, report each, stop them; 1 if one failed."""
    quiet_sdk_logs()
    config = load_config(config_path)
    servers = list(configured_servers(config).values())
    if not servers:
        where = config.path or "no config file"
        sys.stderr.write(f"no MCP servers configured ([mcp.NAME] sections; {where})\n")
        return 0
    try:
        errors = await asyncio.gather(*(_started(server) for server in servers))
    finally:
        await asyncio.gather(*(server.aclose() for server in servers))
    if as_json:
        rows = [_row(server, error) for server, error in zip(servers, errors, strict=True)]
        sys.stdout.write(msgspec.json.encode(rows).decode() + "\n")
    else:
        console = Console(highlight=False, soft_wrap=True)
        for server, error in zip(servers, errors, strict=True):
            _print(console, server, error)
    return EXIT_FAILURE if any(errors) else 0


def _row(server: MCPServer, error: HarnessError | None) -> dict[str, object]:
    return {
        "name": server.name,
        "target": server.target,
        "tools": [{"name": t.name, "description": t.description} for t in server.tools],
        "left_out": list(server.problems),
        "error": None if error is None else {"code": str(error.code), "message": error.message},
    }


def _print(console: Console, server: MCPServer, error: HarnessError | None) -> None:
    head = Text.assemble((server.name, "bold"), (f"  {server.target}", "dim"))
    if error is not None:
        head.append(f"  failed: {error.message} [{error.code}]", style="red")
        console.print(head)
        return
    head.append(f"  {len(server.tools)} tool{'' if len(server.tools) == 1 else 's'}", style="dim")
    console.print(head)
    width = max((len(t.name) for t in server.tools), default=0)
    for tool in server.tools:
        first = tool.description.strip().splitlines()[0] if tool.description.strip() else ""
        console.print(Text.assemble("  ", (tool.name.ljust(width), "cyan"), "  ", first[:100]))
    for problem in server.problems:
        console.print(Text(f"  left out: {problem}", style="yellow"))
