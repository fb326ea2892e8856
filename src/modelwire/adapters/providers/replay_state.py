"""Replay state: restore an assistant message from its envelope, or degrade it (spec §5).

The envelope written by the translators is v2: `{response: {kind: "pi-ai", version: 2, api,
provider, model, response_model?, response_id?, stop_reason, opaque_tail?, extras?}, blocks:
[{type, *_signature?, redacted?, call_type?, item?, opaque?}]}`. `opaque` (on the block it
precedes) and `opaque_tail` (after the last block) are the raw JSON texts of the parts the
response kept whole (server-tool blocks, unknown items), restored in place for a replay to the
same model; `call_type` and `item` describe a tool call that is not a plain function (a custom
or provider client tool, and the provider's item as it came). `extras` is the translator's
report (unknown parts, an inferred finish) and is not read back. The flat legacy v1 state (one object `{kind: "pi-ai", version: 1, api, provider,
model, responseModel?, responseId?, stopReason, blocks}`, camelCase as pi-ai wrote it or
snake_case) is read too (DESIGN §7: write v2, read both): it is lifted into the v2 shape and then
checked the same way. Anything else (foreign adapters' state, a mismatch with the durable content)
degrades that one message to foreign history and reports why; it never fails the request.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Final, NamedTuple, TypeGuard

from msgspec.structs import replace

from ...vocab import Message, ModelSource, ReasoningBlock, TextBlock, ToolCallBlock
from .context import NAssistant, NText, NThinking, NToolCall, foreign_assistant, tool_call

__all__ = ["INVALID_REPLAY_STATE", "ReplayDegrade", "restore_assistant", "validate_envelope"]

INVALID_REPLAY_STATE: Final = "INVALID_REPLAY_STATE"
_STOPS: Final = frozenset({"stop", "length", "toolUse", "error", "aborted"})
_BLOCK_TYPES: Final = {"text": TextBlock, "reasoning": ReasoningBlock, "tool-call": ToolCallBlock}
_SIGNATURES: Final = ("text_signature", "thinking_signature", "thought_signature")

ReplayDegrade = Callable[[str, str, str], None]
"""Called with (provider, model, reason) when a message's replay state is degraded."""


class _Invalid(Exception):
    pass


class ReplayResponse(NamedTuple):
    """The response half of a valid v2 envelope."""

    api: str
    provider: str
    model: str
    stop_reason: str
    response_id: str | None
    response_model: str | None
    opaque_tail: tuple[str, ...] = ()


class ReplayEntry(NamedTuple):
    """One block's replay entry: its signature (of its kind), the redacted flag, the call type
    and item of a tool call that is no plain function, and the kept parts before the block."""

    signature: str | None
    redacted: bool
    call_type: str | None = None
    item: str | None = None
    opaque: tuple[str, ...] = ()


def _obj(value: object) -> TypeGuard[Mapping[str, object]]:
    return isinstance(value, Mapping)


def _text(value: object) -> str | None:
    return value if isinstance(value, str) else None


_SIGNATURE_OF: Final = {
    "text": "text_signature",
    "reasoning": "thinking_signature",
    "tool-call": "thought_signature",
}


_V1_KEYS: Final = {
    "stopReason": "stop_reason",
    "responseModel": "response_model",
    "responseId": "response_id",
    "thinkingSignature": "thinking_signature",
    "textSignature": "text_signature",
    "thoughtSignature": "thought_signature",
}


def _snake(entry: Mapping[str, object]) -> dict[str, object]:
    return {_V1_KEYS.get(key, key): value for key, value in entry.items()}


def _lift_v1(flat: Mapping[str, object]) -> tuple[dict[str, object], object]:
    """The v2 (response, blocks) of a flat v1 state."""
    response = {k: v for k, v in _snake(flat).items() if k != "blocks"}
    response["version"] = 2
    raw = flat.get("blocks")
    if isinstance(raw, (list, tuple)):
        return response, tuple(_snake(b) if _obj(b) else b for b in raw)
    return response, raw


def validate_envelope(
    message: Message, source: ModelSource
) -> tuple[ReplayResponse, tuple[ReplayEntry, ...]]:
    """Run the twelve restore checks; returns (response, blocks) or raises with the reason."""
    state = source.replay_state
    if state is None or (not _obj(state.response) and state.blocks is None):
        raise _Invalid("expected a replay envelope")
    response: object = state.response
    blocks: object = state.blocks
    if not _obj(response):
        raise _Invalid("expected a response object")
    if response.get("kind") != "pi-ai":
        raise _Invalid("unknown state kind")
    if response.get("version") == 1 and blocks is None:
        response, blocks = _lift_v1(response)
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
    if not isinstance(blocks, tuple):
        raise _Invalid("blocks must be an array")
    entries: list[Mapping[str, object]] = []
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
        for key in ("call_type", "item"):
            if key in block and not isinstance(block[key], str):
                raise _Invalid(f"block {i} {key} must be a string")
        if "opaque" in block and _texts(block["opaque"]) is None:
            raise _Invalid(f"block {i} opaque must be an array of strings")
        entries.append(block)
    if "opaque_tail" in response and _texts(response["opaque_tail"]) is None:
        raise _Invalid("opaque_tail must be an array of strings")
    for key in ("provider", "model"):
        if response[key] != getattr(source, key):
            raise _Invalid(f"{key} does not match assistant source")
    if len(entries) != len(message.content):
        raise _Invalid("block count does not match assistant content")
    out: list[ReplayEntry] = []
    for i, (entry, block) in enumerate(zip(entries, message.content, strict=True)):
        kind = str(entry["type"])
        if not isinstance(block, _BLOCK_TYPES[kind]):
            raise _Invalid(f"block {i} does not match assistant content")
        out.append(
            ReplayEntry(
                _text(entry.get(_SIGNATURE_OF[kind])),
                entry.get("redacted") is True,
                _text(entry.get("call_type")),
                _text(entry.get("item")),
                _texts(entry.get("opaque", ())) or (),
            )
        )
    restored = ReplayResponse(
        api=str(response["api"]),
        provider=str(response["provider"]),
        model=str(response["model"]),
        stop_reason=str(response["stop_reason"]),
        response_id=_text(response.get("response_id")),
        response_model=_text(response.get("response_model")),
        opaque_tail=_texts(response.get("opaque_tail", ())) or (),
    )
    return restored, tuple(out)


def _texts(value: object) -> tuple[str, ...] | None:
    """`value` as a tuple of strings, None when it is not an array of strings."""
    if isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value):
        return tuple(str(v) for v in value)
    return None


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
    opaque: list[tuple[int, str]] = []
    for entry, block in zip(entries, message.content, strict=True):
        opaque.extend((len(content), raw) for raw in entry.opaque)
        if isinstance(block, TextBlock):
            content.append(NText(block.text, entry.signature))
        elif isinstance(block, ReasoningBlock):
            content.append(NThinking(block.text, entry.signature, entry.redacted))
        elif isinstance(block, ToolCallBlock):
            call = tool_call(block, entry.call_type, entry.signature)
            content.append(call if entry.item is None else replace(call, item=entry.item))
    opaque.extend((len(content), raw) for raw in response.opaque_tail)
    return NAssistant(
        content=tuple(content),
        opaque=tuple(opaque),
        api=response.api,
        provider=response.provider,
        model=response.model,
        stop_reason=response.stop_reason,
        response_id=response.response_id,
        response_model=response.response_model,
    )
