"""Azure OpenAI content filtering ends in the refusal outcome (CONTENT_FILTER) whose message
names the filtered categories: chat chunk annotations, the ``content_filter`` finish, Responses
failures and the HTTP 400 ``code: content_filter`` answer."""

from __future__ import annotations

import json
from typing import Any

from compat_fixtures import sse_events, translate

from modelwire.adapters.providers.protocols.azure_filter import (
    filtered_categories,
    refine_azure_http_error,
)
from modelwire.adapters.providers.protocols.azure_openai import PROTOCOLS
from modelwire.vocab import Error, TextBlock
from modelwire.wire.status import failure_for_status

CHAT = PROTOCOLS["azure-openai-completions"]
RESPONSES = PROTOCOLS["azure-openai-responses"]
SAFE = {"hate": {"filtered": False, "severity": "safe"}}


def _chunk(content: str | None, finish: str | None = None, filters: Any = SAFE) -> dict[str, Any]:
    delta = {} if content is None else {"content": content}
    return {
        "id": "c1",
        "model": "gpt-4o",
        "choices": [
            {
                "index": 0,
                "delta": delta,
                "finish_reason": finish,
                "content_filter_results": filters,
            }
        ],
    }


def _prompt(filters: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": "",
        "model": "",
        "choices": [],
        "prompt_filter_results": [{"prompt_index": 0, "content_filter_results": filters}],
    }


def _failure(asm: Any) -> Any:
    assert isinstance(asm.finish, Error)
    return asm.finish.failure


def test_azure_content_filter_finish_names_the_filtered_category() -> None:
    asm, _ = translate(
        CHAT,
        [
            sse_events(
                _prompt(SAFE),
                _chunk("Once upon"),
                _chunk(
                    None,
                    "content_filter",
                    {"sexual": {"filtered": True, "severity": "medium"}, **SAFE},
                ),
                "[DONE]",
            )
        ],
    )
    failure = _failure(asm)
    assert failure.code == "CONTENT_FILTER"
    assert "content filter" in failure.message
    assert "sexual (medium)" in failure.message
    assert "hate" not in failure.message
    assert asm.interrupted_blocks() == [TextBlock("Once upon")]
    assert asm.replay_state is None


def test_azure_content_filter_finish_without_annotations_is_still_content_filter() -> None:
    asm, _ = translate(
        CHAT, [sse_events(_chunk("x", filters={}), _chunk(None, "content_filter", {}), "[DONE]")]
    )
    failure = _failure(asm)
    assert failure.code == "CONTENT_FILTER"
    assert "Azure OpenAI content filter" in failure.message


def test_azure_filtered_annotation_is_a_refusal_even_with_a_clean_finish() -> None:
    flagged = {"violence": {"filtered": True, "severity": "high"}}
    asm, _ = translate(
        CHAT, [sse_events(_chunk("a", filters=flagged), _chunk(None, "stop"), "[DONE]")]
    )
    failure = _failure(asm)
    assert failure.code == "CONTENT_FILTER"
    assert "violence (high)" in failure.message


def test_azure_filtered_prompt_annotation_names_the_prompt_category() -> None:
    jailbreak = {"jailbreak": {"filtered": True, "detected": True}}
    asm, _ = translate(
        CHAT, [sse_events(_prompt(jailbreak), _chunk("a"), _chunk(None, "stop"), "[DONE]")]
    )
    failure = _failure(asm)
    assert failure.code == "CONTENT_FILTER"
    assert "prompt jailbreak" in failure.message


def test_azure_unfiltered_annotations_change_nothing() -> None:
    detected = {"protected_material_text": {"detected": True, "filtered": False}, **SAFE}
    asm, _ = translate(
        CHAT,
        [sse_events(_prompt(SAFE), _chunk("hi", filters=detected), _chunk(None, "stop"), "[DONE]")],
    )
    assert asm.finish.kind == "stop"
    assert asm.blocks() == [TextBlock("hi")]


def test_azure_filter_entries_of_another_shape_are_skipped() -> None:
    import msgspec

    raw = {
        k: msgspec.Raw(json.dumps(v).encode())
        for k, v in {
            "custom_blocklists": [{"filtered": True, "id": "b"}],
            "error": {"code": "x", "message": "y"},
            "self_harm": {"filtered": True, "severity": "low"},
        }.items()
    }
    assert filtered_categories(raw) == ["self_harm (low)"]


def _responses(*events: dict[str, Any]) -> bytes:
    return b"".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n".encode() for e in events)


def test_azure_responses_incomplete_content_filter_is_content_filter() -> None:
    body = _responses(
        {"type": "response.created", "response": {"id": "r1"}},
        {
            "type": "response.incomplete",
            "response": {
                "id": "r1",
                "status": "incomplete",
                "incomplete_details": {"reason": "content_filter"},
            },
        },
    )
    asm, _ = translate(RESPONSES, [body])
    assert _failure(asm).code == "CONTENT_FILTER"


def test_azure_responses_failed_with_code_content_filter_is_content_filter() -> None:
    body = _responses(
        {
            "type": "response.failed",
            "response": {
                "id": "r1",
                "status": "failed",
                "error": {"code": "content_filter", "message": "The response was filtered"},
            },
        },
    )
    asm, _ = translate(RESPONSES, [body])
    failure = _failure(asm)
    assert failure.code == "CONTENT_FILTER"
    assert "The response was filtered" in failure.message


def test_azure_responses_other_failures_keep_their_code() -> None:
    body = _responses(
        {
            "type": "response.failed",
            "response": {"status": "failed", "error": {"code": "server_error", "message": "boom"}},
        },
    )
    asm, _ = translate(RESPONSES, [body])
    assert _failure(asm).code != "CONTENT_FILTER"


FILTER_400 = {
    "error": {
        "message": "The response was filtered due to the prompt triggering Azure OpenAI's content "
        "management policy.",
        "type": None,
        "param": "prompt",
        "code": "content_filter",
        "status": 400,
        "innererror": {
            "code": "ResponsibleAIPolicyViolation",
            "content_filter_result": {
                "hate": {"filtered": False, "severity": "safe"},
                "jailbreak": {"filtered": False, "detected": False},
                "self_harm": {"filtered": False, "severity": "safe"},
                "sexual": {"filtered": True, "severity": "medium"},
                "violence": {"filtered": False, "severity": "safe"},
            },
        },
    }
}


def test_azure_http_400_content_filter_is_content_filter_naming_the_category() -> None:
    text = json.dumps(FILTER_400)
    headers = {"apim-request-id": "req-9"}
    base = failure_for_status(400, text, headers, provider="Azure OpenAI")
    assert base.code == "INVALID_REQUEST"  # what the shared status mapping alone says
    error = refine_azure_http_error(base, text, headers)
    assert error.code == "CONTENT_FILTER"
    assert error.status == 400
    assert error.failure.request_id == "req-9"
    assert "sexual (medium)" in error.message
    assert "content management policy" in error.message
    assert "hate" not in error.message


def test_azure_http_400_responses_content_filters_list_is_read_too() -> None:
    body = {
        "error": {
            "code": "content_filter",
            "message": "filtered",
            "content_filters": [
                {
                    "blocked": True,
                    "source_type": "prompt",
                    "content_filter_results": {"violence": {"filtered": True, "severity": "high"}},
                }
            ],
        }
    }
    text = json.dumps(body)
    error = refine_azure_http_error(failure_for_status(400, text, {}, provider="Azure"), text, {})
    assert error.code == "CONTENT_FILTER"
    assert "violence (high)" in error.message


def test_azure_other_http_errors_are_left_to_the_shared_mapping() -> None:
    text = json.dumps({"error": {"code": "DeploymentNotFound", "message": "no such deployment"}})
    base = failure_for_status(404, text, {}, provider="Azure")
    assert refine_azure_http_error(base, text, {}) is base
    assert refine_azure_http_error(base, "not json content_filter", {}) is base
