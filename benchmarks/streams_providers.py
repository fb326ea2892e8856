"""OpenAI Responses and Anthropic Messages renderings of a stream `Plan` (see streams.py)."""

from __future__ import annotations

from typing import Any

from streams_base import (
    ANTHROPIC_TOOL_ID,
    CACHE_HIT,
    CALL_ID,
    FC_ITEM_ID,
    MODEL,
    PROMPT_TOKENS,
    TOOL_NAME,
    Plan,
    dumps,
)

# ---- OpenAI Responses ----------------------------------------------------------------------------


def render_responses(p: Plan) -> list[tuple[str | None, str]]:
    """(event name, data) pairs of an OpenAI Responses stream."""
    rid, rs_id, msg_id = "resp_bench_0001", "rs_bench_0001", "msg_bench_0001"
    out: list[tuple[str | None, str]] = []
    seq = 0

    def emit(obj: dict[str, Any]) -> None:
        nonlocal seq
        obj["sequence_number"] = seq
        seq += 1
        out.append((obj["type"], dumps(obj)))

    resp: dict[str, Any] = {
        "id": rid,
        "object": "response",
        "created_at": 1764460800,
        "status": "in_progress",
        "model": MODEL,
        "output": [],
        "usage": None,
    }
    emit({"type": "response.created", "response": resp})
    emit({"type": "response.in_progress", "response": resp})
    reasoning, text, args = "".join(p.reasoning), "".join(p.text), "".join(p.args)
    rs_done = {
        "type": "reasoning",
        "id": rs_id,
        "status": "completed",
        "summary": [],
        "content": [{"type": "reasoning_text", "text": reasoning}],
    }
    item = {"type": "reasoning", "id": rs_id, "status": "in_progress", "summary": [], "content": []}
    emit({"type": "response.output_item.added", "output_index": 0, "item": item})
    part = {"type": "reasoning_text", "text": ""}
    common = {"item_id": rs_id, "output_index": 0, "content_index": 0}
    emit({"type": "response.content_part.added", **common, "part": part})
    for r in p.reasoning:
        emit({"type": "response.reasoning_text.delta", **common, "delta": r})
    emit({"type": "response.reasoning_text.done", **common, "text": reasoning})
    part_done = {"type": "reasoning_text", "text": reasoning}
    emit({"type": "response.content_part.done", **common, "part": part_done})
    emit({"type": "response.output_item.done", "output_index": 0, "item": rs_done})

    msg = {"type": "message", "id": msg_id, "status": "in_progress", "role": "assistant"}
    emit({"type": "response.output_item.added", "output_index": 1, "item": {**msg, "content": []}})
    common = {"item_id": msg_id, "output_index": 1, "content_index": 0}
    emit(
        {
            "type": "response.content_part.added",
            **common,
            "part": {"type": "output_text", "annotations": [], "text": ""},
        }
    )
    for t in p.text:
        emit({"type": "response.output_text.delta", **common, "delta": t, "logprobs": []})
    emit({"type": "response.output_text.done", **common, "text": text, "logprobs": []})
    text_part = {"type": "output_text", "annotations": [], "text": text}
    emit({"type": "response.content_part.done", **common, "part": text_part})
    msg_done = {**msg, "status": "completed", "content": [text_part]}
    emit({"type": "response.output_item.done", "output_index": 1, "item": msg_done})
    output: list[dict[str, Any]] = [rs_done, msg_done]
    if p.has_tool:
        fc = {
            "type": "function_call",
            "id": FC_ITEM_ID,
            "call_id": CALL_ID,
            "name": TOOL_NAME,
            "status": "in_progress",
            "arguments": "",
        }
        emit({"type": "response.output_item.added", "output_index": 2, "item": fc})
        for a in p.args:
            emit(
                {
                    "type": "response.function_call_arguments.delta",
                    "item_id": FC_ITEM_ID,
                    "output_index": 2,
                    "delta": a,
                }
            )
        emit(
            {
                "type": "response.function_call_arguments.done",
                "item_id": FC_ITEM_ID,
                "output_index": 2,
                "arguments": args,
            }
        )
        fc_done = {**fc, "status": "completed", "arguments": args}
        emit({"type": "response.output_item.done", "output_index": 2, "item": fc_done})
        output.append(fc_done)
    usage = {
        "input_tokens": PROMPT_TOKENS,
        "input_tokens_details": {"cached_tokens": CACHE_HIT},
        "output_tokens": p.n + 2,
        "output_tokens_details": {"reasoning_tokens": len(p.reasoning)},
        "total_tokens": PROMPT_TOKENS + p.n + 2,
    }
    done = {**resp, "status": "completed", "output": output, "usage": usage}
    emit({"type": "response.completed", "response": done})
    return out


# ---- Anthropic Messages --------------------------------------------------------------------------


def render_anthropic(p: Plan) -> list[tuple[str | None, str]]:
    """(event name, data) pairs of an Anthropic Messages stream."""
    out: list[tuple[str | None, str]] = []

    def emit(obj: dict[str, Any]) -> None:
        out.append((obj["type"], dumps(obj)))

    start_usage = {
        "input_tokens": PROMPT_TOKENS - CACHE_HIT,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": CACHE_HIT,
        "output_tokens": 1,
    }
    message = {
        "id": "msg_bench_0001",
        "type": "message",
        "role": "assistant",
        "model": "claude-bench",
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": start_usage,
    }
    emit({"type": "message_start", "message": message})
    thinking = {"type": "thinking", "thinking": "", "signature": ""}
    emit({"type": "content_block_start", "index": 0, "content_block": thinking})
    out.append(("ping", '{"type": "ping"}'))
    for r in p.reasoning:
        delta = {"type": "thinking_delta", "thinking": r}
        emit({"type": "content_block_delta", "index": 0, "delta": delta})
    sig = {"type": "signature_delta", "signature": "EoQDCm0IDhgCKkCDzGs2kL2PgnDCZU/benchsig=="}
    emit({"type": "content_block_delta", "index": 0, "delta": sig})
    emit({"type": "content_block_stop", "index": 0})
    emit({"type": "content_block_start", "index": 1, "content_block": {"type": "text", "text": ""}})
    for t in p.text:
        emit(
            {"type": "content_block_delta", "index": 1, "delta": {"type": "text_delta", "text": t}}
        )
    emit({"type": "content_block_stop", "index": 1})
    if p.has_tool:
        block = {"type": "tool_use", "id": ANTHROPIC_TOOL_ID, "name": TOOL_NAME, "input": {}}
        emit({"type": "content_block_start", "index": 2, "content_block": block})
        for a in p.args:
            delta = {"type": "input_json_delta", "partial_json": a}
            emit({"type": "content_block_delta", "index": 2, "delta": delta})
        emit({"type": "content_block_stop", "index": 2})
    final_usage = {
        "input_tokens": PROMPT_TOKENS - CACHE_HIT,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": CACHE_HIT,
        "output_tokens": p.n + 2,
        "output_tokens_details": {"thinking_tokens": len(p.reasoning)},
    }
    stop = "tool_use" if p.has_tool else "end_turn"
    emit(
        {
            "type": "message_delta",
            "delta": {"stop_reason": stop, "stop_sequence": None},
            "usage": final_usage,
        }
    )
    emit({"type": "message_stop"})
    return out
