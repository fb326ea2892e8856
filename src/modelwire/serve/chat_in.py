"""OpenAI Chat Completions requests (`POST /v1/chat/completions`) into modelwire's vocabulary.

System and developer messages join into the system prompt; user text parts become text blocks;
an assistant's `tool_calls` become tool-call blocks (arguments kept as the raw JSON text); a
`tool` message becomes a tool-result message. `tools` (functions), `tool_choice`,
`response_format` (`json_schema`; `json_object` asks for any JSON object), `reasoning_effort`,
`temperature`, `max_completion_tokens` (or `max_tokens`), `stop`, `parallel_tool_calls`,
`stream` and `stream_options.include_usage` are read; other fields are ignored as the providers
would. Image parts are refused (`UNSUPPORTED_CONTENT`): the gateway does not take attachments yet.
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
from .problems import GatewayError
from .request import GatewayRequest

__all__ = ["parse_chat", "parse_stop", "text_of_parts"]

_GATEWAY_SOURCE = ModelSource("gateway", "client")
"""The source of an assistant message a client sent back: no replay state of an adapter."""


def text_of_parts(value: object, where: str) -> str:
    """The text of a `content` that is a string or a list of text parts."""
    if isinstance(value, str):
        return value
    if value is None:
        return ""
    if not isinstance(value, list):
        raise bad(where, "must be a string or an array of content parts")
    out: list[str] = []
    for i, part in enumerate(value):
        here = f"{where}[{i}]"
        if not isinstance(part, dict):
            raise bad(here, "must be an object")
        kind = part.get("type")
        if kind in ("text", "input_text", "output_text"):
            out.append(require_str(part, "text", f"{here}."))
        elif kind in ("image_url", "input_image", "image", "input_audio", "file"):
            raise GatewayError(
                400,
                "UNSUPPORTED_CONTENT",
                f"{here}: {kind} parts are not served by the gateway (text only)",
            )
        else:
            raise bad(f"{here}.type", f"unknown content part type {kind!r}")
    return "".join(out)


def _tool_calls(raw: Sequence[object], where: str) -> list[ContentBlock]:
    out: list[ContentBlock] = []
    for i, call in enumerate(raw):
        here = f"{where}[{i}]"
        if not isinstance(call, dict):
            raise bad(here, "must be an object")
        function = get_map(call, "function", f"{here}.")
        if function is None:
            raise bad(f"{here}.function", "is required")
        name = require_str(function, "name", f"{here}.function.")
        arguments = get_str(function, "arguments", f"{here}.function.") or "{}"
        out.append(ToolCallBlock(require_str(call, "id", f"{here}."), name, arguments))
    return out


def _messages(raw: Sequence[object]) -> tuple[str | None, tuple[Message, ...]]:
    system: list[str] = []
    messages: list[Message] = []
    for i, item in enumerate(raw):
        where = f"messages[{i}]"
        if not isinstance(item, dict):
            raise bad(where, "must be an object")
        role = item.get("role")
        content = item.get("content")
        if role in ("system", "developer"):
            system.append(text_of_parts(content, f"{where}.content"))
        elif role == "user":
            messages.append(user_message(text_of_parts(content, f"{where}.content")))
        elif role == "assistant":
            blocks: list[ContentBlock] = []
            text = text_of_parts(content, f"{where}.content")
            if text:
                blocks.append(TextBlock(text))
            calls = get_list(item, "tool_calls", f"{where}.")
            blocks.extend(_tool_calls(calls or (), f"{where}.tool_calls"))
            messages.append(assistant_message(blocks, _GATEWAY_SOURCE))
        elif role == "tool":
            call_id = require_str(item, "tool_call_id", f"{where}.")
            messages.append(
                tool_result_message(call_id, text_of_parts(content, f"{where}.content"))
            )
        else:
            raise bad(f"{where}.role", f"unknown role {role!r}")
    if not messages:
        raise bad("messages", "must hold at least one user message")
    return ("\n\n".join(system) if system else None), tuple(messages)


def _tools(raw: Sequence[object] | None) -> tuple[ToolSchema, ...] | None:
    if not raw:
        return None
    out: list[ToolSchema] = []
    for i, tool in enumerate(raw):
        where = f"tools[{i}]"
        if not isinstance(tool, dict) or tool.get("type") != "function":
            raise bad(where, "must be a function tool {type: function, function: {...}}")
        function = get_map(tool, "function", f"{where}.")
        if function is None:
            raise bad(f"{where}.function", "is required")
        out.append(tool_schema(function, f"{where}.function.", "parameters"))
    return tuple(out)


def _tool_choice(raw: object) -> ToolChoice | None:
    if raw is None:
        return None
    if raw in ("auto", "none", "required"):
        return raw
    if isinstance(raw, dict) and raw.get("type") == "function":
        function = get_map(raw, "function", "tool_choice.")
        if function is not None:
            return ToolChoiceTool(require_str(function, "name", "tool_choice.function."))
    raise bad(
        "tool_choice", 'must be "auto", "none", "required" or {type: function, function: {name}}'
    )


def _output(raw: Mapping[str, object] | None) -> OutputSchema | None:
    if raw is None or raw.get("type") in (None, "text"):
        return None
    kind = raw.get("type")
    if kind == "json_object":
        return OutputSchema("json_object", {"type": "object"}, strict=False)
    if kind != "json_schema":
        raise bad("response_format.type", f"unknown response format {kind!r}")
    spec = get_map(raw, "json_schema", "response_format.")
    if spec is None:
        raise bad("response_format.json_schema", "is required")
    schema = get_map(spec, "schema", "response_format.json_schema.")
    return OutputSchema(
        require_str(spec, "name", "response_format.json_schema."),
        dict(schema) if schema is not None else {"type": "object"},
        get_str(spec, "description", "response_format.json_schema."),
        strict=bool(get_bool(spec, "strict", "response_format.json_schema.")),
    )


def parse_stop(raw: object, where: str) -> tuple[str, ...] | None:
    """A `stop` that is a string or a list of strings."""
    if raw is None:
        return None
    if isinstance(raw, str):
        return (raw,)
    if isinstance(raw, list) and all(isinstance(s, str) for s in raw):
        return tuple(raw) or None
    raise bad(where, "must be a string or an array of strings")


def parse_chat(body: Mapping[str, object]) -> GatewayRequest:
    """The gateway request of a Chat Completions body; a bad field is a 400 naming it."""
    model = require_str(body, "model", "")
    raw_messages = get_list(body, "messages", "")
    if raw_messages is None:
        raise bad("messages", "is required")
    system, messages = _messages(raw_messages)
    choices = get_int(body, "n", "")
    if choices is not None and choices != 1:
        raise bad("n", f"the gateway answers one choice per request, not {choices}")
    stream = bool(get_bool(body, "stream", ""))
    stream_options = get_map(body, "stream_options", "")
    include = bool(stream_options and get_bool(stream_options, "include_usage", "stream_options."))
    max_tokens = get_int(body, "max_completion_tokens", "")
    options = GenerateOptions(
        provider="",
        model="",
        messages=messages,
        system=system,
        tools=_tools(get_list(body, "tools", "")),
        temperature=get_number(body, "temperature", ""),
        max_tokens=max_tokens if max_tokens is not None else get_int(body, "max_tokens", ""),
        stop=parse_stop(body.get("stop"), "stop"),
        reasoning_effort=get_str(body, "reasoning_effort", ""),
        output=_output(get_map(body, "response_format", "")),
        tool_choice=_tool_choice(body.get("tool_choice")),
        parallel_tool_calls=get_bool(body, "parallel_tool_calls", ""),
    )
    return GatewayRequest(model, stream, options, include_usage=include)
