"""Replay state v2: written on finish, restored, or degraded per message (spec §5, §8.5 #137-144)."""

from __future__ import annotations

from typing import Any

import pytest

from modelwire.adapters.providers.context import FOREIGN_API, NText, NThinking, NToolCall
from modelwire.adapters.providers.replay_state import restore_assistant
from modelwire.vocab import (
    Message,
    ModelSource,
    ReasoningBlock,
    ReplayEnvelope,
    TextBlock,
    ToolCallBlock,
)

CONTENT = (ReasoningBlock("think"), TextBlock("hi"), ToolCallBlock("c1|fc_1", "f", '{"a":1}'))
RESPONSE = {
    "kind": "pi-ai",
    "version": 2,
    "api": "openai-responses",
    "provider": "openai",
    "model": "gpt-5",
    "response_model": "gpt-5-2025",
    "response_id": "resp_1",
    "stop_reason": "toolUse",
}
BLOCKS = (
    {"type": "reasoning", "thinking_signature": '{"type":"reasoning"}'},
    {"type": "text", "text_signature": '{"v":1,"id":"msg_1"}'},
    {"type": "tool-call"},
)


def _message(response: Any = RESPONSE, blocks: Any = BLOCKS) -> Message:
    state = ReplayEnvelope(response, blocks)
    return Message("m1", "assistant", CONTENT, ModelSource("openai", "gpt-5", state))


def test_mp_137_valid_v2_state_restores_everything() -> None:
    message = _message()
    assert isinstance(message.source, ModelSource)
    restored = restore_assistant(message, message.source)
    assert (restored.api, restored.response_id, restored.response_model) == (
        "openai-responses",
        "resp_1",
        "gpt-5-2025",
    )
    assert restored.content == (
        NThinking("think", '{"type":"reasoning"}'),
        NText("hi", '{"v":1,"id":"msg_1"}'),
        NToolCall("c1|fc_1", "f", {"a": 1}),
    )


@pytest.mark.parametrize("camel", [True, False], ids=["camelCase", "snake_case"])
def test_a_flat_v1_state_is_read_like_v2(camel: bool) -> None:
    """DESIGN §7: write v2, read both. The legacy flat object restores the same message."""
    flat: dict[str, Any] = {
        "kind": "pi-ai",
        "version": 1,
        "api": "openai-responses",
        "provider": "openai",
        "model": "gpt-5",
        ("responseId" if camel else "response_id"): "resp_1",
        ("stopReason" if camel else "stop_reason"): "toolUse",
        "blocks": [
            {"type": "reasoning", ("thinkingSignature" if camel else "thinking_signature"): "sig"},
            {"type": "text"},
            {"type": "tool-call"},
        ],
    }
    message = _message(flat, None)
    assert isinstance(message.source, ModelSource)
    seen: list[object] = []
    restored = restore_assistant(message, message.source, lambda *a: seen.append(a))
    assert seen == []
    assert (restored.api, restored.response_id, restored.stop_reason) == (
        "openai-responses",
        "resp_1",
        "toolUse",
    )
    assert restored.content[0] == NThinking("think", "sig")


@pytest.mark.parametrize(
    ("response", "blocks", "reason"),
    [
        ({**RESPONSE, "version": 3}, BLOCKS, "unsupported version 3"),
        (
            {**RESPONSE, "version": 1, "blocks": []},
            None,
            "block count does not match assistant content",
        ),
        ({**RESPONSE, "version": 1, "blocks": 5}, None, "blocks must be an array"),
        (7, BLOCKS, "expected a response object"),
        ({**RESPONSE, "kind": "other"}, BLOCKS, "unknown state kind"),
        ({**RESPONSE, "api": 3}, BLOCKS, "api must be a non-empty string"),
        ({**RESPONSE, "provider": ""}, BLOCKS, "provider must be a non-empty string"),
        ({**RESPONSE, "stop_reason": "weird"}, BLOCKS, "unknown stop_reason"),
        ({**RESPONSE, "response_id": 5}, BLOCKS, "response_id must be a string"),
        (RESPONSE, None, "blocks must be an array"),
        (RESPONSE, (3, *BLOCKS[1:]), "block 0 must be an object"),
        (RESPONSE, ({"type": "image"}, *BLOCKS[1:]), "block 0 has an unknown type"),
        (
            RESPONSE,
            ({"type": "reasoning", "redacted": "yes"}, *BLOCKS[1:]),
            "block 0 redacted must be boolean",
        ),
        ({**RESPONSE, "model": "gpt-4"}, BLOCKS, "model does not match assistant source"),
        (RESPONSE, BLOCKS[:2], "block count does not match assistant content"),
        (RESPONSE, (BLOCKS[1], BLOCKS[0], BLOCKS[2]), "block 0 does not match assistant content"),
    ],
)
def test_mp_139_144_invalid_state_degrades_to_foreign(
    response: Any, blocks: Any, reason: str
) -> None:
    message = _message(response, blocks)
    assert isinstance(message.source, ModelSource)
    seen: list[tuple[str, str, str]] = []
    restored = restore_assistant(message, message.source, lambda *a: seen.append(a))
    assert restored.api == FOREIGN_API
    assert (restored.provider, restored.model, restored.stop_reason) == (
        "openai",
        "gpt-5",
        "toolUse",
    )
    assert seen == [("openai", "gpt-5", f"invalid pi-ai replay state: {reason}")]
    assert restored.content[1] == NText("hi")
