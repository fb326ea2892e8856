"""Running one model tool call into its tool-result message (never a crash): arguments decoded
or refused, the tool's time limit, errors turned into error results with stable codes.

A result the log could not store is never lost: a lone UTF-16 surrogate in a text (which no
UTF-8 storage can carry) becomes U+FFFD (a valid surrogate pair stays the one character it
encodes), and a JSON value holding one is rendered with ASCII escapes (``"\\ud800"``), exact.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import msgspec

from ..errors import ErrorCode, HarnessError
from ..vocab import (
    AudioBlock,
    ContentBlock,
    DocumentBlock,
    ImageBlock,
    Message,
    ReasoningBlock,
    TextBlock,
    ToolCallBlock,
    ToolResultBlock,
    tool_result_message,
)
from ..vocab.json import MAX_JSON_DEPTH, json_nesting_exceeds
from .context import RunContext
from .signature import ArgsError, text_parameter, too_deep
from .tools import Tool
from .wait import Sleep

__all__ = ["ToolOutcome", "run_tool_call"]

_BLOCK_TYPES = (TextBlock, ReasoningBlock, ImageBlock, ToolCallBlock, ToolResultBlock)


@dataclass(frozen=True, slots=True)
class ToolOutcome:
    """The result of one call: the tool-result message and, for errors, the stable code and the
    class name of the exception the tool raised (None when it raised nothing)."""

    message: Message
    is_error: bool
    error_code: str | None
    error_class: str | None = None


def _text(text: str) -> str:
    """`text` with every lone surrogate replaced by U+FFFD (ASCII and valid text: unchanged)."""
    if text.isascii():
        return text
    try:
        text.encode()
    except UnicodeEncodeError:
        return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    return text


def _block(block: ContentBlock) -> ContentBlock:
    """`block` with its texts storable (see `_text`)."""
    match block:
        case TextBlock() | ReasoningBlock():
            text = _text(block.text)
            return block if text is block.text else msgspec.structs.replace(block, text=text)
        case ToolCallBlock():
            return ToolCallBlock(_text(block.id), _text(block.name), _text(block.arguments))
        case ToolResultBlock():
            content = tuple(_block(b) for b in block.content)
            return msgspec.structs.replace(
                block, tool_call_id=_text(block.tool_call_id), content=content
            )
        case DocumentBlock() if block.name is not None:
            name = _text(block.name)
            return block if name is block.name else msgspec.structs.replace(block, name=name)
        case ImageBlock() | DocumentBlock() | AudioBlock():
            return block
        case _:
            typing.assert_never(block)


def _json_text(value: object) -> str:
    """`value` as compact JSON text; one holding a lone surrogate with ASCII escapes."""
    try:
        return msgspec.json.encode(value).decode()
    except UnicodeEncodeError:
        builtins = msgspec.to_builtins(value)
        return json.dumps(builtins, ensure_ascii=True, separators=(",", ":"))


def _content_of(value: object) -> tuple[ContentBlock, ...]:
    if isinstance(value, str):
        return (TextBlock(_text(value)),)
    if isinstance(value, _BLOCK_TYPES):
        return (_block(value),)
    if (
        isinstance(value, (list, tuple))
        and value
        and all(isinstance(v, _BLOCK_TYPES) for v in value)
    ):
        return tuple(_block(v) for v in value)
    if value is None:
        return ()
    return (TextBlock(_json_text(value)),)


def _error(call: ToolCallBlock, code: str, text: str, kind: str | None = None) -> ToolOutcome:
    message = tool_result_message(call.id, _text(text), is_error=True)
    return ToolOutcome(message, True, code, kind)


class _TimedOut(Exception):
    pass


def _invocation(
    tool: Tool, call: ToolCallBlock, context: RunContext | None
) -> Callable[[], object] | ToolOutcome:
    """What calling `tool` for `call` means, or the error outcome of arguments it refuses."""
    sig = tool.signature
    if tool.free_text is not None:  # the raw text is the input, never parsed
        if sig is None:
            return lambda: tool.fn(call.arguments)
        raw = msgspec.json.encode({text_parameter(sig, tool.name): call.arguments})
        args, kwargs = sig.bind(raw.decode(), context)
        return lambda: tool.fn(*args, **kwargs)
    if sig is not None:
        try:
            args, kwargs = sig.bind(call.arguments, context)
        except ArgsError as exc:
            return _error(
                call,
                ErrorCode.INVALID_ARGS,
                f"tool {call.name!r}: invalid arguments: {exc.message}; call it again with "
                "arguments that match its parameters schema",
            )
        return lambda: tool.fn(*args, **kwargs)
    if json_nesting_exceeds(call.arguments.encode("utf-8", "surrogatepass"), MAX_JSON_DEPTH):
        return _error(call, ErrorCode.INVALID_ARGS, f"tool {call.name!r}: arguments: {too_deep()}")
    try:
        parsed = msgspec.json.decode(call.arguments) if call.arguments.strip() else {}
    except msgspec.DecodeError as exc:
        return _error(
            call,
            ErrorCode.INVALID_ARGS,
            f"tool {call.name!r}: arguments are not valid JSON ({exc})",
        )
    if not isinstance(parsed, dict):
        return _error(
            call,
            ErrorCode.INVALID_ARGS,
            f"tool {call.name!r}: arguments must be a JSON object, got {type(parsed).__name__}",
        )
    return lambda: tool.fn(parsed)


async def _settled(invoke: Callable[[], object]) -> object:
    value = invoke()
    return await value if inspect.isawaitable(value) else value


async def _within(invoke: Callable[[], object], timeout_ms: float | None, sleep: Sleep) -> object:
    """Run `invoke` in this task; past `timeout_ms` (by `sleep`) an alarm cancels it here and
    `_TimedOut` is raised once it has unwound. A cancellation from outside stays one. One timer
    task per call (the call itself needs none), so a timed tool costs little more than an untimed
    one."""
    if timeout_ms is None:
        return await _settled(invoke)
    task = asyncio.current_task()
    assert task is not None
    fired = False

    async def alarm() -> None:
        nonlocal fired
        await sleep(timeout_ms / 1000.0)
        fired = True
        task.cancel()

    timer = asyncio.ensure_future(alarm())
    try:
        result = await _settled(invoke)
    except asyncio.CancelledError:
        if fired and task.uncancel() == 0:  # the alarm's cancellation, and no one else's
            raise _TimedOut from None
        raise
    finally:
        timer.cancel()
    if fired:
        task.uncancel()  # the tool swallowed the alarm's cancellation and returned anyway
    return result


async def run_tool_call(
    call: ToolCallBlock,
    tools: Mapping[str, Tool],
    context: RunContext | None = None,
    *,
    sleep: Sleep = asyncio.sleep,
) -> ToolOutcome:
    """Run one model tool call; bad arguments, unknown tools and tool errors become error results.

    Arguments that do not validate give `INVALID_ARGS` naming the field; a `HarnessError` yields
    a result naming the tool and the error's code; any other exception yields code
    `TOOL_FAILED`; past the tool's `timeout_ms` (measured by `sleep`), `TOOL_TIMEOUT`. Raised
    errors carry their class name. Only `BaseException`s that are not `Exception`
    (cancellation) propagate. `context` goes to a `RunContext` parameter.
    """
    tool = tools.get(call.name)
    if tool is None:
        return _error(call, ErrorCode.UNKNOWN_TOOL, f"unknown tool {call.name!r}")
    invoke = _invocation(tool, call, context)
    if isinstance(invoke, ToolOutcome):
        return invoke
    try:
        content = _content_of(await _within(invoke, tool.timeout_ms, sleep))
    except _TimedOut:
        return _error(
            call,
            ErrorCode.TOOL_TIMEOUT,
            f"tool {call.name!r} did not finish within {tool.timeout_ms:g} ms [TOOL_TIMEOUT]",
        )
    except HarnessError as exc:
        return _error(
            call,
            exc.code,
            f"tool {call.name!r} failed [{exc.code}]: {exc.message}",
            type(exc).__name__,
        )
    except Exception as exc:
        return _error(
            call,
            ErrorCode.TOOL_FAILED,
            f"tool {call.name!r} failed [{ErrorCode.TOOL_FAILED}]: {type(exc).__name__}: {exc}",
            type(exc).__name__,
        )
    return ToolOutcome(tool_result_message(call.id, content), False, None)
