"""Thought signatures round-trip: a recorded Gemini turn, stored as a harness message with its
replay envelope, comes back in the next request to the same provider and model with every
signature byte-exact, and without them to any other model (Gemini 3 then gets the skip value on
the turn's first call)."""

from __future__ import annotations

import json
from typing import Any

from google_fixtures import GEMINI, assemble, context, load_case, model, translate

from modelwire.adapters.providers.protocols.google_generative import (
    SKIP_SIGNATURE,
    build_google_request,
)
from modelwire.adapters.providers.protocols.request import RequestOptions
from modelwire.vocab import (
    Message,
    ModelSource,
    ToolCallBlock,
    ToolSchema,
    tool_result_message,
    user_message,
)

TOOL = ToolSchema(name="get_country", description="d", parameters={"type": "object"})


def _recorded_turn(name: str, model_id: str) -> tuple[Message, dict[str, Any]]:
    body, expected = load_case(GEMINI / name)
    chunks, record = translate([body], model=model_id)
    asm = assemble(chunks)
    source = ModelSource(record.provider, model_id, asm.replay_state)
    return asm.message(source), expected


def _model_parts(history: list[Message], model_id: str, provider: str = "gem") -> Any:
    ctx = context(*history, tools=[TOOL])
    request = build_google_request(model(model_id, provider=provider), ctx, RequestOptions())
    contents = json.loads(request.body)["contents"]
    (turn,) = [c for c in contents if c["role"] == "model"]
    return turn["parts"]


def _call_history(turn: Message) -> list[Message]:
    (call,) = [b for b in turn.content if isinstance(b, ToolCallBlock)]
    return [user_message("Where am I?"), turn, tool_result_message(call.id, "France")]


def test_a_function_call_signature_goes_back_byte_exact_to_the_same_model() -> None:
    turn, expected = _recorded_turn(
        "pydantic-gemini3-pro-fc-thought-signature.sse", "gemini-3-pro-preview"
    )
    (signature,) = expected["extras"]["tool_call_thought_signatures"]
    parts = _model_parts(_call_history(turn), "gemini-3-pro-preview")
    assert parts == [
        {"functionCall": {"name": "get_country", "args": {}}, "thoughtSignature": signature}
    ]


def test_another_model_never_sees_the_signature() -> None:
    turn, expected = _recorded_turn(
        "pydantic-gemini3-pro-fc-thought-signature.sse", "gemini-3-pro-preview"
    )
    (signature,) = expected["extras"]["tool_call_thought_signatures"]
    history = _call_history(turn)
    older = _model_parts(history, "gemini-2.5-pro")
    assert older == [{"functionCall": {"name": "get_country", "args": {}}}]
    sibling = _model_parts(history, "gemini-3-flash-preview")
    assert sibling == [
        {"functionCall": {"name": "get_country", "args": {}}, "thoughtSignature": SKIP_SIGNATURE}
    ]
    other_route = _model_parts(history, "gemini-3-pro-preview", provider="vertex")
    assert signature not in json.dumps(other_route)


def test_parallel_calls_keep_the_one_signature_on_the_first_call() -> None:
    turn, expected = _recorded_turn(
        "fantasy-gemini25-flash-two-fc-one-event.sse", "gemini-2.5-flash"
    )
    calls = [b for b in turn.content if isinstance(b, ToolCallBlock)]
    history = [
        user_message("add and multiply"),
        turn,
        *(tool_result_message(c.id, "5") for c in calls),
    ]
    parts = _model_parts(history, "gemini-2.5-flash")
    want = expected["extras"]["tool_call_thought_signatures"]
    assert [p.get("thoughtSignature") for p in parts] == want
    assert [p["functionCall"]["args"] for p in parts] == [
        t["arguments"] for t in expected["tool_calls"]
    ]


def test_a_text_signature_goes_back_on_its_text_part_to_the_same_model_only() -> None:
    turn, expected = _recorded_turn(
        "fantasy-gemini3-pro-text-signature.sse", "gemini-3-pro-preview"
    )
    (recorded,) = expected["extras"]["thought_signatures"]
    history = [user_message("Hi in Portuguese?"), turn, user_message("Thanks")]
    same = _model_parts(history, "gemini-3-pro-preview")
    assert same == [{"text": expected["text"], "thoughtSignature": recorded["signature"]}]
    assert _model_parts(history, "gemini-2.5-flash") == [{"text": expected["text"]}]


def test_thought_summaries_replay_as_thought_parts_to_the_same_model() -> None:
    turn, expected = _recorded_turn(
        "fantasy-gemini25-flash-thought-then-fc.sse", "gemini-2.5-flash"
    )
    parts = _model_parts(_call_history(turn), "gemini-2.5-flash")
    assert parts[0] == {"thought": True, "text": expected["reasoning"]}
    assert parts[1]["thoughtSignature"] == expected["extras"]["tool_call_thought_signatures"][0]
    foreign = _model_parts(_call_history(turn), "gemini-2.5-pro")
    assert foreign[0] == {"text": expected["reasoning"]}  # plain text, no thought flag
