"""What every protocol does to the neutral history before building a body (spec §4.1, §4.2).

Failed assistant turns are dropped, foreign assistant messages lose their signatures (thinking
becomes text) and the parts they kept whole (only the model that produced a server-tool block or
an unknown item can read it back), tool-call ids are normalized for the target protocol, orphaned tool calls get a
synthesized error result, and the output cap is clamped to the context estimate.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import msgspec

from ..context import (
    NAssistant,
    NContext,
    NMessage,
    NText,
    NThinking,
    NToolCall,
    NToolResult,
    NUser,
)
from ..materialize import ModelDescriptor

__all__ = ["kept_parts", "output_cap", "prepare_messages"]


def _same_model(message: NAssistant, model: ModelDescriptor) -> bool:
    return (
        message.provider == model.provider
        and message.api == model.api
        and message.model == model.id
    )


def prepare_messages(
    ctx: NContext, model: ModelDescriptor, normalize_id: Callable[[str], str]
) -> list[NMessage]:
    """The history a builder serializes, after pi-ai's cross-model and pairing rules."""
    out: list[NMessage] = []
    renamed: dict[str, str] = {}
    pending: list[NToolCall] = []
    answered: set[str] = set()

    def flush() -> None:
        for call in pending:
            if call.id not in answered:
                out.append(
                    NToolResult(
                        tool_call_id=call.id,
                        tool_name=call.name,
                        content=(NText("No result provided"),),
                        is_error=True,
                    )
                )
        pending.clear()

    for message in ctx.messages:
        if isinstance(message, NAssistant):
            flush()
            if message.stop_reason in ("error", "aborted"):
                continue
            if not _same_model(message, model):
                message = _foreign(message, normalize_id, renamed)
            pending.extend(p for p in message.content if isinstance(p, NToolCall))
            out.append(message)
        elif isinstance(message, NToolResult):
            new_id = renamed.get(message.tool_call_id, message.tool_call_id)
            if new_id != message.tool_call_id:
                message = msgspec.structs.replace(message, tool_call_id=new_id)
            answered.add(new_id)
            out.append(message)
        else:
            flush()
            out.append(message)
    flush()
    return out


def _foreign(
    message: NAssistant, normalize_id: Callable[[str], str], renamed: dict[str, str]
) -> NAssistant:
    content: list[NText | NThinking | NToolCall] = []
    for part in message.content:
        if isinstance(part, NThinking):
            if part.redacted or not part.text.strip():
                continue
            content.append(NText(part.text))
        elif isinstance(part, NText):
            content.append(NText(part.text))
        else:
            new_id = normalize_id(part.id)
            renamed[part.id] = new_id
            content.append(
                NToolCall(
                    new_id, part.name, part.arguments, call_type=part.call_type, input=part.input
                )
            )
    return msgspec.structs.replace(message, content=tuple(content), opaque=())


def kept_parts(message: NAssistant) -> dict[int, list[msgspec.Raw]]:
    """The parts a same-model assistant message kept whole (server-tool blocks, unknown items),
    as raw JSON sent back byte for byte, by the index of the content part each precedes
    (``len(content)``: after the last). A text that is not JSON (a damaged log) is left out."""
    out: dict[int, list[msgspec.Raw]] = {}
    for at, raw in message.opaque:
        data = raw.encode()
        try:
            msgspec.json.decode(data)
        except msgspec.DecodeError:
            continue
        out.setdefault(at, []).append(msgspec.Raw(data))
    return out


def _chars(message: NMessage) -> int:
    if isinstance(message, NUser):
        if isinstance(message.content, str):
            return len(message.content)
        return sum(len(p.text) if isinstance(p, NText) else 4800 for p in message.content)
    if isinstance(message, NToolResult):
        return sum(len(p.text) if isinstance(p, NText) else 4800 for p in message.content)
    total = 0
    for part in message.content:
        if isinstance(part, (NText, NThinking)):
            total += len(part.text)
        else:
            total += len(part.name) + len(msgspec.json.encode(part.arguments))
    return total


def output_cap(ctx: NContext, model: ModelDescriptor, max_tokens: int | None) -> int:
    """`min(max_tokens ?? model.max_tokens, context_window - estimate - 4096)`, at least 1."""
    chars = len(ctx.system or "") + sum(_chars(m) for m in ctx.messages)
    if ctx.tools:
        chars += len(msgspec.json.encode(list(ctx.tools)))
    estimate = math.ceil(chars / 4)
    wanted = max_tokens if max_tokens is not None else model.max_tokens
    return max(1, min(wanted, model.context_window - estimate - 4096))
