"""Anthropic Messages requests (`POST /v1/messages`) into modelwire's vocabulary.

`system` (a string or text blocks), user and assistant turns of text, `tool_use`, `tool_result`
and `thinking` blocks, `tools`, `tool_choice` (`auto`, `any`, `tool`, `none`), `thinking`
(`enabled` with `budget_tokens`, mapped to a reasoning effort: ≤ 2048 `low`, ≤ 8192 `medium`,
else `high`; `adaptive` → `medium`), `output_format` (`json_schema`), `max_tokens`,
`temperature`, `stop_sequences` and `stream` are read.

A thinking block whose signature the gateway minted (`replaystate.py`) brings its message's
replay state back: the adapter that produced it gets its own signatures and item ids again.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ..vocab import (
    ContentBlock,
    GenerateOptions,
    Message,
    ModelSource,
    OutputSchema,
    ReasoningBlock,
    TextBlock,
    ToolCallBlock,
    ToolChoice,
    ToolChoiceTool,
    ToolSchema,
    assistant_message,
    tool_result_message,
    user_message,
)
from .chat_in import text_of_parts
from .fields import (
    bad,
    get_bool,
    get_int,
    get_list,
    get_map,
    get_number,
    get_str,
    require_str,
    tool_schema,
)
from .replaystate import envelope_of_signature
from .request import GatewayRequest

__all__ = ["parse_messages", "thinking_effort"]

_CLIENT_SOURCE = ModelSource("gateway", "client")


def thinking_effort(thinking: Mapping[str, object] | None) -> str | None:
    """The reasoning effort of an Anthropic `thinking` setting (module docstring)."""
    if thinking is None:
        return None
    kind = thinking.get("type")
    if kind == "disabled":
        return None
    if kind == "adaptive":
        return "medium"
    if kind != "enabled":
        raise bad("thinking.type", f'must be "enabled", "adaptive" or "disabled", got {kind!r}')
    budget = get_int(thinking, "budget_tokens", "thinking.") or 0
    return "low" if budget <= 2048 else "medium" if budget <= 8192 else "high"


def _json_text(value: object) -> str:
    import msgspec

    return msgspec.json.encode(value).decode()


def _user_turn(content: object, where: str) -> list[Message]:
    if isinstance(content, str):
        return [user_message(content)]
    if not isinstance(content, list):
        raise bad(where, "must be a string or an array of content blocks")
    out: list[Message] = []
    text: list[ContentBlock] = []
    for i, block in enumerate(content):
        here = f"{where}[{i}]"
        if not isinstance(block, dict):
            raise bad(here, "must be an object")
        if block.get("type") == "tool_result":
            if text:
                out.append(user_message(text))
                text = []
            result = text_of_parts(block.get("content"), f"{here}.content")
            call_id = require_str(block, "tool_use_id", f"{here}.")
            is_error = bool(get_bool(block, "is_error", f"{here}."))
            out.append(tool_result_message(call_id, result, is_error=is_error))
        else:
            text.append(TextBlock(text_of_parts([block], where)))
    if text:
        out.append(user_message(text))
    return out


def _assistant_turn(content: object, where: str) -> Message:
    if isinstance(content, str):
        return assistant_message((TextBlock(content),), _CLIENT_SOURCE)
    if not isinstance(content, list):
        raise bad(where, "must be a string or an array of content blocks")
    blocks: list[ContentBlock] = []
    source = _CLIENT_SOURCE
    for i, block in enumerate(content):
        here = f"{where}[{i}]"
        if not isinstance(block, dict):
            raise bad(here, "must be an object")
        kind = block.get("type")
        if kind == "text":
            blocks.append(TextBlock(require_str(block, "text", f"{here}.")))
        elif kind == "tool_use":
            name = require_str(block, "name", f"{here}.")
            arguments = _json_text(block.get("input") or {})
            blocks.append(ToolCallBlock(require_str(block, "id", f"{here}."), name, arguments))
        elif kind == "thinking":
            blocks.append(ReasoningBlock(get_str(block, "thinking", f"{here}.") or ""))
            minted = envelope_of_signature(get_str(block, "signature", f"{here}.") or "")
            if minted is not None:
                source = minted
        elif kind == "redacted_thinking":
            continue  # opaque to every route but the one that wrote it: dropped
        else:
            raise bad(f"{here}.type", f"unknown assistant content block type {kind!r}")
    return assistant_message(blocks, source)


def _messages(raw: Sequence[object]) -> tuple[Message, ...]:
    out: list[Message] = []
    for i, item in enumerate(raw):
        where = f"messages[{i}]"
        if not isinstance(item, dict):
            raise bad(where, "must be an object")
        role = item.get("role")
        if role == "user":
            out.extend(_user_turn(item.get("content"), f"{where}.content"))
        elif role == "assistant":
            out.append(_assistant_turn(item.get("content"), f"{where}.content"))
        else:
            raise bad(f"{where}.role", f'must be "user" or "assistant", got {role!r}')
    if not out:
        raise bad("messages", "must hold at least one message")
    return tuple(out)


def _tools(raw: Sequence[object] | None) -> tuple[ToolSchema, ...] | None:
    if not raw:
        return None
    out: list[ToolSchema] = []
    for i, tool in enumerate(raw):
        where = f"tools[{i}]"
        if not isinstance(tool, dict):
            raise bad(where, "must be an object")
        out.append(tool_schema(tool, f"{where}.", "input_schema"))
    return tuple(out)


def _tool_choice(raw: Mapping[str, object] | None) -> tuple[ToolChoice | None, bool | None]:
    if raw is None:
        return None, None
    kind = raw.get("type")
    parallel = get_bool(raw, "disable_parallel_tool_use", "tool_choice.")
    parallel_calls = None if parallel is None else not parallel
    if kind == "auto":
        return "auto", parallel_calls
    if kind == "any":
        return "required", parallel_calls
    if kind == "none":
        return "none", parallel_calls
    if kind == "tool":
        return ToolChoiceTool(require_str(raw, "name", "tool_choice.")), parallel_calls
    raise bad("tool_choice.type", f'must be "auto", "any", "tool" or "none", got {kind!r}')


def _output(raw: Mapping[str, object] | None) -> OutputSchema | None:
    if raw is None:
        return None
    if raw.get("type") != "json_schema":
        raise bad("output_format.type", 'must be "json_schema"')
    schema = get_map(raw, "schema", "output_format.")
    return OutputSchema("output", dict(schema) if schema is not None else {"type": "object"})


def _system(raw: object) -> str | None:
    if raw is None:
        return None
    text = text_of_parts(raw, "system")
    return text or None


def parse_messages(body: Mapping[str, object]) -> GatewayRequest:
    """The gateway request of a Messages body; a bad field is a 400 naming it."""
    model = require_str(body, "model", "")
    raw = get_list(body, "messages", "")
    if raw is None:
        raise bad("messages", "is required")
    max_tokens = get_int(body, "max_tokens", "")
    if max_tokens is None:
        raise bad("max_tokens", "is required")
    stops = get_list(body, "stop_sequences", "")
    if stops is not None and not all(isinstance(s, str) for s in stops):
        raise bad("stop_sequences", "must be an array of strings")
    choice, parallel = _tool_choice(get_map(body, "tool_choice", ""))
    output = get_map(body, "output_format", "")
    options = GenerateOptions(
        provider="",
        model="",
        messages=_messages(raw),
        system=_system(body.get("system")),
        tools=_tools(get_list(body, "tools", "")),
        temperature=get_number(body, "temperature", ""),
        max_tokens=max_tokens,
        stop=tuple(str(s) for s in stops) if stops else None,
        reasoning_effort=thinking_effort(get_map(body, "thinking", "")),
        output=_output(output),
        tool_choice=choice,
        parallel_tool_calls=parallel,
    )
    return GatewayRequest(model, bool(get_bool(body, "stream", "")), options)
