"""Replay state v2: restore an assistant message from its envelope, or degrade it (spec §5).

The envelope written by the translators is `{response: {kind: "pi-ai", version: 2, api, provider,
model, response_model?, response_id?, stop_reason}, blocks: [{type, *_signature?, redacted?}]}`.
Anything else (the flat v1 shape, foreign adapters' state, a mismatch with the durable content)
degrades that one message to foreign history and reports why; it never fails the request.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final

from ...vocab import Message, ModelSource, ReasoningBlock, TextBlock, ToolCallBlock
from .context import NAssistant, NText, NThinking, NToolCall, foreign_assistant, parse_arguments

__all__ = ["INVALID_REPLAY_STATE", "ReplayDegrade", "restore_assistant", "validate_envelope"]

INVALID_REPLAY_STATE: Final = "INVALID_REPLAY_STATE"
_STOPS: Final = frozenset({"stop", "length", "toolUse", "error", "aborted"})
_BLOCK_TYPES: Final = {"text": TextBlock, "reasoning": ReasoningBlock, "tool-call": ToolCallBlock}
_SIGNATURES: Final = ("text_signature", "thinking_signature", "thought_signature")

ReplayDegrade = Callable[[str, str, str], None]
"""Called with (provider, model, reason) when a message's replay state is degraded."""


class _Invalid(Exception):
    pass


def _obj(value: object) -> bool:
    return isinstance(value, Mapping)


def validate_envelope(
    message: Message, source: ModelSource
) -> tuple[Mapping[str, Any], tuple[Mapping[str, Any], ...]]:
    """Run the twelve restore checks; returns (response, blocks) or raises with the reason."""
    state = source.replay_state
    if state is None or (not _obj(state.response) and state.blocks is None):
        raise _Invalid("expected a replay envelope")
    response = state.response
    if not _obj(response):
        raise _Invalid("expected a response object")
    if response.get("kind") != "pi-ai":
        raise _Invalid("unknown state kind")
    if response.get("version") != 2:
        raise _Invalid(f"unsupported version {response.get('version')}")
    for key in ("api", "provider", "model"):
        value = response.get(key)
        if not isinstance(value, str) or not value:
            raise _Invalid(f"{key} must be a non-empty string")
    if response.get("stop_reason") not in _STOPS:
        raise _Invalid("unknown stop_reason")
    for key in ("response_model", "response_id"):
        if key in response and not isinstance(response[key], str):
            raise _Invalid(f"{key} must be a string")
    blocks = state.blocks
    if not isinstance(blocks, tuple):
        raise _Invalid("blocks must be an array")
    for i, block in enumerate(blocks):
        if not _obj(block):
            raise _Invalid(f"block {i} must be an object")
        if block.get("type") not in _BLOCK_TYPES:
            raise _Invalid(f"block {i} has an unknown type")
        for key in _SIGNATURES:
            if key in block and not isinstance(block[key], str):
                raise _Invalid(f"block {i} {key} must be a string")
        if "redacted" in block and not isinstance(block["redacted"], bool):
            raise _Invalid(f"block {i} redacted must be boolean")
    for key in ("provider", "model"):
        if response[key] != getattr(source, key):
            raise _Invalid(f"{key} does not match assistant source")
    if len(blocks) != len(message.content):
        raise _Invalid("block count does not match assistant content")
    for i, (entry, block) in enumerate(zip(blocks, message.content, strict=True)):
        if not isinstance(block, _BLOCK_TYPES[entry["type"]]):
            raise _Invalid(f"block {i} does not match assistant content")
    return response, blocks


def restore_assistant(
    message: Message, source: ModelSource, on_degrade: ReplayDegrade | None = None
) -> NAssistant:
    """Rebuild the neutral assistant message from durable content plus its replay state."""
    try:
        response, entries = validate_envelope(message, source)
    except _Invalid as exc:
        if on_degrade is not None:
            on_degrade(source.provider, source.model, f"invalid pi-ai replay state: {exc}")
        return foreign_assistant(message)
    content: list[NText | NThinking | NToolCall] = []
    for entry, block in zip(entries, message.content, strict=True):
        if isinstance(block, TextBlock):
            content.append(NText(block.text, entry.get("text_signature")))
        elif isinstance(block, ReasoningBlock):
            content.append(
                NThinking(block.text, entry.get("thinking_signature"), bool(entry.get("redacted")))
            )
        elif isinstance(block, ToolCallBlock):
            args = parse_arguments(block.arguments)
            content.append(NToolCall(block.id, block.name, args, entry.get("thought_signature")))
    return NAssistant(
        content=tuple(content),
        api=response["api"],
        provider=response["provider"],
        model=response["model"],
        stop_reason=response["stop_reason"],
        response_id=response.get("response_id"),
        response_model=response.get("response_model"),
    )
