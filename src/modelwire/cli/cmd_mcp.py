"""The `modelwire mcp …` commands (typer); the work is in `mcp.py`."""

from __future__ import annotations

import typer

from .errors import run_async
from .options import ConfigOption, DebugOption, JsonOption, examples

__all__ = ["mcp_app"]

mcp_app = typer.Typer(
    help="The MCP servers of the config file's [mcp.NAME] sections (`modelwire chat --mcp NAME` "
    "offers their tools to the model).",
    short_help="List the configured MCP servers and their tools.",
    no_args_is_help=True,
    add_completion=False,
)


@mcp_app.command(
    "list",
    short_help="Start each configured MCP server and list its tools.",
    epilog=examples("modelwire mcp list", "modelwire mcp list --config mcp.toml --json"),
)
def mcp_list(
    config: ConfigOption = None, json_out: JsonOption = False, debug: DebugOption = False
) -> None:
    """Start each MCP server of the config file (at once, each within its timeout_ms), print its
    tools as the model sees them (`<server>_<tool>`, then the description) and stop it. A server
    that fails to start gets one line saying why; the exit code is then 1."""

    async def go() -> int:
        from .mcp import list_servers

        return await list_servers(config_path=config, as_json=json_out)

    run_async(go, debug=debug)
