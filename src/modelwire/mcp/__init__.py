"""MCP tools: any Model Context Protocol server's tools in a durable agent turn.

`MCPServer.stdio(command, args)` runs a server as a child process, `MCPServer.http(url)` reaches
one over streamable HTTP (`MCPServer.sse(url)`: the legacy HTTP+SSE transport);
`Agent(..., mcp_servers=[server])` offers its tools to the model, named `<server>_<tool>`, with
their input schemas. Calls are logged, timed, resumed and answered like any tool's. Built on the
official `mcp` SDK (the `[mcp]` extra), imported only when a server starts, so importing this
package stays light. `servers_from_config` reads the `[mcp.NAME]` sections of a config file.
"""

from __future__ import annotations

from .config import servers_from_config
from .server import MCPServer

__all__ = ["MCPServer", "servers_from_config"]
