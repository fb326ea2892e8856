"""OpenAI Responses requests (`POST /v1/responses`) into modelwire's vocabulary.

`input` (a string, or items: messages with text parts, `function_call`, `function_call_output`;
`reasoning` items are dropped, as for a route that did not write them), `instructions`, `tools`
(functions), `tool_choice`, `text.format` (`json_schema`), `reasoning.effort`,
`max_output_tokens`, `temperature`, `parallel_tool_calls` and `stream` are read;
`previous_response_id` is refused: the gateway keeps no response state for a client to name.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ..vocab import (
    ContentBlock,
    GenerateOptions,
    Message,
    ModelSource,
    OutputSchema,
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
from .request import GatewayRequest

__all__ = ["parse_responses"]

_CLIENT_SOURCE = ModelSource("gateway", "client")


def _items(raw: object) -> tuple[str | None, tuple[Message, ...]]:
    if isinstance(raw, str):
        return None, (user_message(raw),)
    if not isinstance(raw, list):
        raise bad("input", "must be a string or an array of input items")
    system: list[str] = []
    out: list[Message] = []
    pending: list[ContentBlock] = []  # an assistant turn being collected

    def flush() -> None:
        if pending:
            out.append(assistant_message(tuple(pending), _CLIENT_SOURCE))
            pending.clear()

    for i, item in enumerate(raw):
        where = f"input[{i}]"
        if not isinstance(item, dict):
            raise bad(where, "must be an object")
        kind = item.get("type", "message")
        if kind == "message":
            role = item.get("role")
            text = text_of_parts(item.get("content"), f"{where}.content")
            if role in ("system", "developer"):
                system.append(text)
            elif role == "user":
                flush()
                out.append(user_message(text))
            elif role == "assistant":
                pending.append(TextBlock(text))
            else:
                raise bad(f"{where}.role", f"unknown role {role!r}")
        elif kind == "function_call":
            name = require_str(item, "name", f"{where}.")
            arguments = get_str(item, "arguments", f"{where}.") or "{}"
            pending.append(
                ToolCallBlock(require_str(item, "call_id", f"{where}."), name, arguments)
            )
        elif kind == "function_call_output":
            flush()
            call_id = require_str(item, "call_id", f"{where}.")
            out.append(
                tool_result_message(call_id, text_of_parts(item.get("output"), f"{where}.output"))
            )
        elif kind == "reasoning":
            continue
        else:
            raise bad(f"{where}.type", f"unknown input item type {kind!r}")
    flush()
    if not out:
        raise bad("input", "must hold at least one message")
    return ("\n\n".join(system) if system else None), tuple(out)


def _tools(raw: Sequence[object] | None) -> tuple[ToolSchema, ...] | None:
    if not raw:
        return None
    out: list[ToolSchema] = []
    for i, tool in enumerate(raw):
        where = f"tools[{i}]"
        if not isinstance(tool, dict) or tool.get("type") != "function":
            raise bad(where, "must be a function tool {type: function, name, parameters}")
        out.append(tool_schema(tool, f"{where}.", "parameters"))
    return tuple(out)


def _tool_choice(raw: object) -> ToolChoice | None:
    if raw is None:
        return None
    if raw in ("auto", "none", "required"):
        return raw
    if isinstance(raw, dict) and raw.get("type") == "function":
        return ToolChoiceTool(require_str(raw, "name", "tool_choice."))
    raise bad("tool_choice", 'must be "auto", "none", "required" or {type: function, name}')


def _output(text: Mapping[str, object] | None) -> OutputSchema | None:
    spec = None if text is None else get_map(text, "format", "text.")
    if spec is None or spec.get("type") == "text":
        return None
    if spec.get("type") != "json_schema":
        raise bad("text.format.type", f"unknown text format {spec.get('type')!r}")
    schema = get_map(spec, "schema", "text.format.")
    return OutputSchema(
        require_str(spec, "name", "text.format."),
        dict(schema) if schema is not None else {"type": "object"},
        get_str(spec, "description", "text.format."),
        strict=bool(get_bool(spec, "strict", "text.format.")),
    )


def parse_responses(body: Mapping[str, object]) -> GatewayRequest:
    """The gateway request of a Responses body; a bad field is a 400 naming it."""
    model = require_str(body, "model", "")
    if body.get("previous_response_id") is not None:
        raise bad("previous_response_id", "the gateway keeps no responses: send the whole input")
    if "input" not in body:
        raise bad("input", "is required")
    system, messages = _items(body["input"])
    instructions = get_str(body, "instructions", "")
    if instructions:
        system = instructions if system is None else f"{instructions}\n\n{system}"
    reasoning = get_map(body, "reasoning", "")
    options = GenerateOptions(
        provider="",
        model="",
        messages=messages,
        system=system,
        tools=_tools(get_list(body, "tools", "")),
        temperature=get_number(body, "temperature", ""),
        max_tokens=get_int(body, "max_output_tokens", ""),
        reasoning_effort=None if reasoning is None else get_str(reasoning, "effort", "reasoning."),
        output=_output(get_map(body, "text", "")),
        tool_choice=_tool_choice(body.get("tool_choice")),
        parallel_tool_calls=get_bool(body, "parallel_tool_calls", ""),
    )
    return GatewayRequest(model, bool(get_bool(body, "stream", "")), options)
