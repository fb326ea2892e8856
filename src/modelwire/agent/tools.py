"""Tools the model may call, and their execution into tool-result messages (never a crash)."""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TypeAlias

import msgspec

from ..errors import ErrorCode, HarnessError
from ..vocab import (
    ContentBlock,
    ImageBlock,
    Message,
    ReasoningBlock,
    TextBlock,
    ToolCallBlock,
    ToolResultBlock,
    ToolSchema,
    freeze_json,
    tool_result_message,
)
from ..vocab.json import JsonValue

__all__ = ["Tool", "ToolFn", "ToolOutcome", "ToolResultValue", "run_tool_call"]

ToolResultValue: TypeAlias = str | Sequence[ContentBlock] | JsonValue
"""What a tool function may return: text, content blocks, or any JSON value (rendered compactly)."""

ToolFn: TypeAlias = Callable[[dict[str, JsonValue]], ToolResultValue | Awaitable[ToolResultValue]]
"""A tool implementation: receives the parsed argument object; sync or async."""

_BLOCK_TYPES = (TextBlock, ReasoningBlock, ImageBlock, ToolCallBlock, ToolResultBlock)


@dataclass(frozen=True, slots=True)
class Tool:
    """A named tool: description and parameters JSON schema go to the model, `fn` runs the call."""

    name: str
    description: str
    parameters_json_schema: Mapping[str, JsonValue]
    fn: ToolFn = field(compare=False)

    @property
    def parameters(self) -> Mapping[str, JsonValue]:
        """The parameters JSON schema (alias of `parameters_json_schema`)."""
        return self.parameters_json_schema

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise HarnessError("tool name must be a non-empty string", ErrorCode.INVALID_CONFIG)
        if not isinstance(self.parameters_json_schema, Mapping):
            raise HarnessError(
                f"tool {self.name!r}: parameters must be a JSON-schema object",
                ErrorCode.INVALID_CONFIG,
            )
        if not callable(self.fn):
            raise HarnessError(f"tool {self.name!r}: fn must be callable", ErrorCode.INVALID_CONFIG)

    @property
    def schema(self) -> ToolSchema:
        """The provider-neutral schema sent with requests (parameters deep-frozen)."""
        return ToolSchema(self.name, self.description, freeze_json(self.parameters_json_schema))


@dataclass(frozen=True, slots=True)
class ToolOutcome:
    """The result of one call: the tool-result message and, for errors, the stable code."""

    message: Message
    is_error: bool
    error_code: str | None


def _content_of(value: object) -> tuple[ContentBlock, ...]:
    if isinstance(value, str):
        return (TextBlock(value),)
    if isinstance(value, _BLOCK_TYPES):
        return (value,)
    if (
        isinstance(value, (list, tuple))
        and value
        and all(isinstance(v, _BLOCK_TYPES) for v in value)
    ):
        return tuple(value)
    if value is None:
        return ()
    return (TextBlock(msgspec.json.encode(value).decode()),)


def _error(call: ToolCallBlock, code: str, text: str) -> ToolOutcome:
    return ToolOutcome(tool_result_message(call.id, text, is_error=True), True, code)


async def run_tool_call(call: ToolCallBlock, tools: Mapping[str, Tool]) -> ToolOutcome:
    """Run one model tool call; bad arguments, unknown tools and tool errors become error results.

    A `HarnessError` yields a result naming the tool and the error's code; any other exception
    yields code `TOOL_FAILED`. Only `BaseException`s that are not `Exception` (cancellation)
    propagate.
    """
    tool = tools.get(call.name)
    if tool is None:
        return _error(call, ErrorCode.UNKNOWN_TOOL, f"unknown tool {call.name!r}")
    try:
        args = msgspec.json.decode(call.arguments) if call.arguments.strip() else {}
    except msgspec.DecodeError as exc:
        return _error(
            call,
            ErrorCode.INVALID_ARGS,
            f"tool {call.name!r}: arguments are not valid JSON ({exc})",
        )
    if not isinstance(args, dict):
        return _error(
            call,
            ErrorCode.INVALID_ARGS,
            f"tool {call.name!r}: arguments must be a JSON object, got {type(args).__name__}",
        )
    try:
        result = tool.fn(args)
        if inspect.isawaitable(result):
            result = await result
        content = _content_of(result)
    except HarnessError as exc:
        return _error(call, exc.code, f"tool {call.name!r} failed [{exc.code}]: {exc.message}")
    except Exception as exc:
        return _error(
            call,
            ErrorCode.TOOL_FAILED,
            f"tool {call.name!r} failed [{ErrorCode.TOOL_FAILED}]: {type(exc).__name__}: {exc}",
        )
    return ToolOutcome(tool_result_message(call.id, content), False, None)


def tool_map(tools: Iterable[Tool]) -> dict[str, Tool]:
    """Index tools by name; a duplicate name raises `INVALID_CONFIG`."""
    out: dict[str, Tool] = {}
    for tool in tools:
        if not isinstance(tool, Tool):
            raise HarnessError(f"not a Tool: {tool!r}", ErrorCode.INVALID_CONFIG)
        if tool.name in out:
            raise HarnessError(f"duplicate tool name {tool.name!r}", ErrorCode.INVALID_CONFIG)
        out[tool.name] = tool
    return out
