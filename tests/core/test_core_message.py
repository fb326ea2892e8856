"""Message constructors R-MK-2..5 and immutability R-MSG-1/2 (spec/core.md §11.3 MSG-01..04)."""

from __future__ import annotations

import re

import msgspec
import pytest

from modelwire import (
    Message,
    ModelSource,
    ReplayEnvelope,
    TextBlock,
    ToolResultBlock,
    ToolSource,
    UserSource,
    assistant_message,
    tool_result_message,
    user_message,
)
from modelwire.vocab import freeze_message

UUID4 = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$")


def assert_frozen(value: object, field: str) -> None:
    with pytest.raises(AttributeError):
        setattr(value, field, None)


def test_msg_01_user_message_is_detached_and_frozen() -> None:
    block = TextBlock("hello")
    content = [block]
    msg = user_message(content)
    assert UUID4.match(msg.id)
    assert msg.role == "user"
    assert msg.source == UserSource()
    assert isinstance(msg.content, tuple)
    content.append(TextBlock("leak"))  # mutating the caller's list does not reach the message
    assert msg.content == (TextBlock("hello"),)
    assert_frozen(msg, "role")
    assert_frozen(msg.content[0], "text")
    assert_frozen(msg.source, "plugin")
    with pytest.raises(TypeError):
        msg.content[0] = TextBlock("x")  # type: ignore[index]
    assert user_message("hello").content == (TextBlock("hello"),)
    assert user_message("a").id != user_message("a").id


def test_msg_02_freeze_message_keeps_the_id_and_copies() -> None:
    original = Message("existing", "user", (TextBlock("t"),), UserSource())
    frozen = freeze_message(original)
    assert frozen is not original
    assert frozen == original
    assert frozen.id == "existing"
    assert_frozen(frozen.content[0], "text")


def test_msg_03_assistant_message_carries_model_provenance() -> None:
    env = ReplayEnvelope({"request": 1})
    source = ModelSource("deepseek", "deepseek-chat", replay_state=env)
    msg = assistant_message([TextBlock("answer")], source)
    assert msg.role == "assistant"
    assert msg.source == ModelSource("deepseek", "deepseek-chat", replay_state=env)
    assert msg.source.kind == "model"
    assert UUID4.match(msg.id)
    assert_frozen(msg, "content")
    assert_frozen(msg.source, "replay_state")
    with pytest.raises(TypeError):
        env.response["request"] = 2
    encoded = msgspec.json.decode(msgspec.json.encode(msg))
    assert encoded["source"] == {
        "kind": "model",
        "provider": "deepseek",
        "model": "deepseek-chat",
        "replay_state": {"response": {"request": 1}},
    }


def test_msg_04_tool_result_message_has_one_tool_result_block() -> None:
    msg = tool_result_message("call-1", [TextBlock("result")], is_error=False)
    assert msg.role == "user"
    assert msg.source == ToolSource("call-1")
    assert msg.content == (ToolResultBlock("call-1", (TextBlock("result"),), False),)
    block = msg.content[0]
    assert isinstance(block, ToolResultBlock)
    assert block.is_error is False
    assert msgspec.json.decode(msgspec.json.encode(block))["is_error"] is False
    assert UUID4.match(msg.id)
    assert_frozen(msg, "id")
    assert_frozen(block, "content")
