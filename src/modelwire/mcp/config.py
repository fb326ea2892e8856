"""`[mcp.NAME]` sections of a config file: the MCP servers `modelwire chat --mcp NAME` offers.

```toml
[mcp.files]                          # a stdio server: command, args, env, cwd
command = "npx"
args = ["-y", "@modelcontextprotocol/server-filesystem", "/srv/notes"]

[mcp.github]                         # an HTTP server: url, headers (transport = "sse": legacy)
url = "https://api.githubcopilot.com/mcp/"
headers = { Authorization = "Bearer ${GITHUB_TOKEN}" }   # read from the environment at start
```

Also `timeout_ms`, `call_timeout_ms`, `idempotent` (true or tool names) and `needs_approval`, as
`MCPServer` takes them; a url server also takes a route's transport settings (`proxy`, `ca_file`,
`client_cert`, `client_key`, `max_connections`, `keepalive_s`, `connect_timeout_ms`: DESIGN §9). A section with both or neither of `command` and `url`, an unknown key or
a value of the wrong type is `INVALID_CONFIG` naming `mcp.NAME.key` (never a value).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import Final, Literal

import msgspec

from ..errors import ErrorCode, HarnessError
from ..wire.settings import SETTING_FIELDS, TransportSettings, transport_settings
from ._spec import invalid
from .server import DEFAULT_TIMEOUT_MS, MCPServer

__all__ = ["servers_from_config"]

_AT: Final = re.compile(r" - at `\$\.?([^`]*)`$")
_UNKNOWN: Final = re.compile(r"Object contains unknown field `(.+?)`")


class _Section(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    command: str | None = None
    args: list[str] = msgspec.field(default_factory=list)
    env: dict[str, str] | None = None
    cwd: str | None = None
    url: str | None = None
    headers: dict[str, str] | None = None
    transport: Literal["streamable-http", "sse"] = "streamable-http"
    timeout_ms: float = DEFAULT_TIMEOUT_MS
    call_timeout_ms: float | None = None
    idempotent: bool | list[str] = False
    needs_approval: bool | list[str] = False


def _problem(name: str, message: str) -> str:
    unknown = _UNKNOWN.match(message)
    if unknown is not None:
        keys = ", ".join(_Section.__struct_fields__)
        return f"mcp.{name}.{unknown.group(1)}: unknown key (an [mcp.NAME] section takes {keys})"
    at = _AT.search(message)
    if at is None:
        return f"mcp.{name}: {message}"
    field = at.group(1)
    return f"mcp.{name}{'.' + field if field else ''}: {message[: at.start()]}"


def _server(name: str, section: _Section, settings: TransportSettings | None) -> MCPServer:
    if (section.command is None) == (section.url is None):
        raise invalid("give either command (a stdio server) or url (an HTTP server)")
    if section.command is not None:
        if section.headers is not None or section.transport != "streamable-http":
            raise invalid("headers and transport are for url servers, not command ones")
        if settings is not None:
            raise invalid(f"{', '.join(SETTING_FIELDS)} are for url servers, not command ones")
        return MCPServer.stdio(
            section.command,
            section.args,
            env=section.env,
            cwd=None if section.cwd is None else os.path.expanduser(section.cwd),
            name=name,
            needs_approval=section.needs_approval,
            timeout_ms=section.timeout_ms,
            call_timeout_ms=section.call_timeout_ms,
            idempotent=section.idempotent,
        )
    assert section.url is not None
    if section.args or section.env is not None or section.cwd is not None:
        raise invalid("args, env and cwd are for command servers, not url ones")
    return (MCPServer.sse if section.transport == "sse" else MCPServer.http)(
        section.url,
        headers=section.headers,
        name=name,
        needs_approval=section.needs_approval,
        timeout_ms=section.timeout_ms,
        call_timeout_ms=section.call_timeout_ms,
        idempotent=section.idempotent,
        transport=settings,
    )


def _settings(name: str, raw: dict[str, object]) -> TransportSettings | None:
    """The section's transport settings, taken out of `raw` (None: it names none)."""
    given: dict[str, object] = {key: raw.pop(key) for key in SETTING_FIELDS if key in raw}
    if not given:
        return None
    try:
        return transport_settings(given, f"mcp.{name}")
    except ValueError as exc:
        raise HarnessError(str(exc), ErrorCode.INVALID_CONFIG) from None


def servers_from_config(sections: Mapping[str, object]) -> dict[str, MCPServer]:
    """The servers of a config file's `mcp` table, by name (see the module docstring)."""
    out: dict[str, MCPServer] = {}
    for name, raw in sections.items():
        if not isinstance(raw, Mapping):
            raise HarnessError(f"mcp.{name} must be a table of settings", ErrorCode.INVALID_CONFIG)
        fields = dict(raw)
        settings = _settings(name, fields)
        try:
            section = msgspec.convert(fields, _Section)
        except msgspec.ValidationError as exc:
            raise HarnessError(_problem(name, str(exc)), ErrorCode.INVALID_CONFIG) from None
        try:
            out[name] = _server(name, section, settings)
        except HarnessError as exc:
            raise HarnessError(f"mcp.{name}: {exc.message}", exc.code) from None
    return out
