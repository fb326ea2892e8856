"""An MCP server's listed tools as agent `Tool`s, and a call's result as tool-result content.

Each listed tool becomes a `Tool` named `<server>_<tool>` (characters providers refuse become
`_`; a name past 64 characters is cut and given a hash of the full name, so it stays unique)
whose parameters are the tool's input schema. A tool whose input schema is not a valid JSON
Schema of an object, or whose name would repeat another's, is left out, and the reason is kept in
the server's `problems` (`modelwire mcp list` prints them) and logged.

A call's arguments are validated against the schema first (jsonschema-rs, compiled once per
listing): arguments that do not match are an `INVALID_ARGS` error result naming the field, and the
server is never called. A result's text becomes text blocks and its structured content JSON text
when no text came with it; an embedded text resource its text; an image, audio or binary resource
a note naming its type and size (modelwire has no attachment store for tool-result media yet).
An `isError` result is a `TOOL_FAILED` error result carrying the server's text.
"""

from __future__ import annotations

import hashlib
import logging
import re
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Final

import msgspec

from ..agent import Tool
from ..errors import ErrorCode, HarnessError
from ..vocab import ContentBlock, JsonValue, TextBlock

if TYPE_CHECKING:
    from jsonschema_rs import Validator
    from mcp_types import CallToolResult
    from mcp_types import Tool as Listed

__all__ = ["Caller", "agent_tools", "result_content", "tool_name"]

_LOG: Final = logging.getLogger("modelwire.mcp")
_INVALID: Final = re.compile(r"[^A-Za-z0-9_-]")
_MAX_NAME: Final = 64
_MAX_DETAIL: Final = 300

Caller = Callable[[str, dict[str, JsonValue]], Awaitable["CallToolResult"]]
"""Sends `tools/call` for an MCP tool name with its arguments; raises `HarnessError` on failure."""


def tool_name(server: str, tool: str) -> str:
    """The agent's name of `server`'s tool `tool` (see the module docstring)."""
    name = _INVALID.sub("_", f"{server}_{tool}")
    if len(name) > _MAX_NAME:
        digest = hashlib.sha256(f"{server}\x00{tool}".encode()).hexdigest()[:8]
        name = f"{name[: _MAX_NAME - 9]}_{digest}"
    return name


class _Call:
    """The `fn` of one MCP tool: validate, send, convert."""

    __slots__ = ("_call", "_server", "_tool", "_validator")

    def __init__(self, server: str, tool: str, validator: Validator, call: Caller) -> None:
        self._server, self._tool, self._validator, self._call = server, tool, validator, call

    async def __call__(self, arguments: dict[str, JsonValue]) -> tuple[ContentBlock, ...]:
        if not self._validator.is_valid(arguments):
            error = next(iter(self._validator.iter_errors(arguments)))
            where = "/".join(str(part) for part in error.instance_path)
            raise HarnessError(
                f"invalid arguments for tool {self._tool!r} of MCP server {self._server!r}: "
                f"{error.message[:_MAX_DETAIL]}{f' at {where!r}' if where else ''}; call it "
                "again with arguments that match its parameters schema",
                ErrorCode.INVALID_ARGS,
            )
        return result_content(self._server, self._tool, await self._call(self._tool, arguments))


def _schema_problem(schema: object) -> str | Validator:
    """A compiled validator for a tool's input schema, or why it cannot be one."""
    import jsonschema_rs

    if not isinstance(schema, dict) or schema.get("type") != "object":
        return 'its input schema is not a JSON Schema object (`"type": "object"`)'
    try:
        jsonschema_rs.meta.validate(schema)
        return jsonschema_rs.validator_for(schema, offline=True)
    except (jsonschema_rs.ValidationError, jsonschema_rs.ReferencingError) as exc:
        detail = exc.message if isinstance(exc, jsonschema_rs.ValidationError) else str(exc)
        return f"its input schema is not a valid JSON Schema: {detail[:_MAX_DETAIL]}"
    except (ValueError, TypeError) as exc:
        return f"its input schema is not a valid JSON Schema: {str(exc)[:_MAX_DETAIL]}"


def agent_tools(
    server: str,
    listed: Sequence[Listed],
    call: Caller,
    *,
    timeout_ms: float,
    idempotent: bool | frozenset[str],
    needs_approval: bool | frozenset[str] = False,
) -> tuple[tuple[Tool, ...], tuple[str, ...]]:
    """The `Tool`s of `server`'s listing, and the problems of the tools left out."""
    tools: list[Tool] = []
    problems: list[str] = []
    seen: dict[str, str] = {}
    for item in listed:
        name = tool_name(server, item.name)
        checked = _schema_problem(item.input_schema)
        if isinstance(checked, str) or name in seen:
            problem = checked if isinstance(checked, str) else f"its name repeats {seen[name]!r}"
            problems.append(f"tool {item.name!r} is left out: {problem}")
            _LOG.warning("MCP server %r: tool %r is left out: %s", server, item.name, problem)
            continue
        seen[name] = item.name
        again = idempotent if isinstance(idempotent, bool) else item.name in idempotent
        ask = needs_approval if isinstance(needs_approval, bool) else item.name in needs_approval
        tools.append(
            Tool(
                name,
                item.description or item.title or "",
                item.input_schema,
                _Call(server, item.name, checked, call),
                timeout_ms=timeout_ms,
                idempotent=again,
                server=server,
                needs_approval=ask,
            )
        )
    return tuple(tools), tuple(problems)


def result_content(server: str, tool: str, result: CallToolResult) -> tuple[ContentBlock, ...]:
    """The tool-result content of `result` (see the module docstring)."""
    blocks: list[ContentBlock] = [TextBlock(_text(item)) for item in result.content]
    if result.is_error:
        text = " ".join(b.text for b in blocks if isinstance(b, TextBlock)) or "(no message)"
        raise HarnessError(
            f"MCP server {server!r}: tool {tool!r} reported an error: {text}",
            ErrorCode.TOOL_FAILED,
        )
    if result.structured_content is not None and not blocks:
        blocks.append(TextBlock(msgspec.json.encode(result.structured_content).decode()))
    return tuple(blocks)


def _text(item: object) -> str:
    """One content item of a result as text."""
    import mcp_types as types

    if isinstance(item, types.TextContent):
        return item.text
    if isinstance(item, (types.ImageContent, types.AudioContent)):
        kind = "image" if isinstance(item, types.ImageContent) else "audio"
        size = len(item.data) * 3 // 4
        return f"[{kind} {item.mime_type}, about {size} bytes: not passed on to the model]"
    if isinstance(item, types.EmbeddedResource):
        resource = item.resource
        if isinstance(resource, types.TextResourceContents):
            return f"[resource {resource.uri}]\n{resource.text}"
        return f"[resource {resource.uri} ({resource.mime_type or 'binary'}), not passed on]"
    if isinstance(item, types.ResourceLink):
        return f"[resource link {item.uri}{f': {item.name}' if item.name else ''}]"
    return f"[{type(item).__name__} content, not passed on]"
