"""Every recorded Azure OpenAI stream (chat and Responses; v1 API and 2024-02-01 deployments)
assembles to its expected result through the Azure protocol of its kind, whole and cut at
arbitrary offsets; the bodies we build agree with the recorded requests."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from compat_fixtures import (
    check_recording,
    descriptor,
    dialect_of,
    folder,
    load,
    request_body,
    split,
    stream_cases,
    translate,
)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from modelwire.adapters.providers.context import NContext, NUser
from modelwire.adapters.providers.protocols.azure_openai import PROTOCOLS
from modelwire.adapters.providers.protocols.request import RequestOptions
from modelwire.vocab import ToolSchema

STREAMS = stream_cases("azure-openai")
APIS = {"chat": "azure-openai-completions", "responses": "azure-openai-responses"}


def _check(body: bytes, reads: list[bytes], expected: dict[str, Any]) -> None:
    dialect = dialect_of(body)
    api = APIS[dialect]
    asm, chunks = translate(PROTOCOLS[api], reads)
    check_recording(api, dialect, asm, expected, chunks)


def test_azure_folder_holds_chat_and_responses_recordings() -> None:
    assert len(STREAMS) == 10
    kinds = [dialect_of(p.values[0].read_bytes()) for p in STREAMS]
    assert kinds.count("chat") == 6 and kinds.count("responses") == 4


@pytest.mark.parametrize("sse", STREAMS)
def test_azure_recording_assembles_to_expected_whole(sse: Path) -> None:
    body, expected = load(sse)
    _check(body, [body], expected)


@pytest.mark.parametrize("sse", STREAMS)
@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=st.data())
def test_azure_recording_assembles_to_expected_rechunked(sse: Path, data: st.DataObject) -> None:
    body, expected = load(sse)
    cuts = data.draw(st.sets(st.integers(1, len(body) - 1), max_size=40))
    _check(body, split(body, cuts), expected)


@pytest.mark.parametrize("sse", STREAMS)
def test_azure_recording_assembles_one_byte_at_a_time(sse: Path) -> None:
    body, expected = load(sse)
    _check(body, [body[i : i + 1] for i in range(len(body))], expected)


def _sent(api: str, recorded: dict[str, Any], **model: Any) -> dict[str, Any]:
    messages = recorded.get("messages") or recorded["input"]
    system = next((m["content"] for m in messages if m["role"] in ("system", "developer")), None)
    user = next(m["content"] for m in messages if m["role"] == "user")
    text = user if isinstance(user, str) else user[0]["text"]
    tools = tuple(
        ToolSchema(
            (t.get("function") or t)["name"],
            (t.get("function") or t)["description"],
            (t.get("function") or t)["parameters"],
        )
        for t in recorded.get("tools", ())
    )
    model.setdefault("base_url", "https://res.openai.azure.com/openai/v1")
    desc = descriptor(api, recorded["model"], **model)
    max_tokens = recorded.get("max_completion_tokens") or recorded.get("max_output_tokens")
    options = RequestOptions(max_tokens=max_tokens, tool_choice=recorded.get("tool_choice"))
    built = PROTOCOLS[api].build(desc, NContext(system, (NUser(text),), tools), options)
    body: dict[str, Any] = json.loads(built.body)
    return body


def test_azure_2024_02_01_deployment_body_sends_only_what_that_version_knows() -> None:
    sse = folder("azure-openai") / "openllmetry-azure-gpt35-turbo-2024-02-01.sse"
    recorded = request_body(sse)
    assert recorded is not None
    ours = _sent("azure-openai-completions", recorded, api_version="2024-02-01")
    assert ours["model"] == recorded["model"] == "openllmetry-testing"  # the deployment name
    assert ours["messages"] == recorded["messages"]
    assert ours["stream"] is True
    # 2024-02-01 predates stream_options, store and max_completion_tokens
    assert set(ours) == {"model", "messages", "stream", "max_tokens"}


@pytest.mark.parametrize(
    "name", ["fantasy-azure-v1-gpt5-mini-chat-text", "fantasy-azure-v1-o4-mini-chat-text"]
)
def test_azure_v1_chat_body_matches_the_recorded_request(name: str) -> None:
    recorded = request_body(folder("azure-openai") / f"{name}.sse")
    assert recorded is not None
    ours = _sent("azure-openai-completions", recorded)
    for key in ("model", "messages", "max_completion_tokens", "stream_options", "stream"):
        assert ours[key] == recorded[key]


def test_azure_v1_chat_tool_body_matches_the_recorded_request() -> None:
    recorded = request_body(folder("azure-openai") / "fantasy-azure-v1-gpt5-mini-chat-thinking.sse")
    assert recorded is not None
    ours = _sent("azure-openai-completions", recorded)
    for key in ("model", "messages", "stream_options", "tool_choice", "stream"):
        assert ours[key] == recorded[key]
    assert ours["tools"][0]["function"]["name"] == recorded["tools"][0]["function"]["name"]
    assert ours["tools"][0]["function"]["strict"] is False


@pytest.mark.parametrize(
    "name", ["fantasy-azure-v1-o4-mini-responses-text", "fantasy-azure-v1-o4-mini-responses-tool"]
)
def test_azure_v1_responses_body_matches_the_recorded_request(name: str) -> None:
    recorded = request_body(folder("azure-openai") / f"{name}.sse")
    assert recorded is not None
    # a reasoning model with `off` declared without a value: no reasoning field, developer role
    level_map = {"off": None, "low": "low"}
    ours = _sent("azure-openai-responses", recorded, reasoning=True, level_map=level_map)
    for key in ("model", "input", "max_output_tokens", "store", "stream"):
        assert ours[key] == recorded[key]
    assert "reasoning" not in ours and "reasoning" not in recorded
    if "tools" in recorded:
        assert ours["tool_choice"] == recorded["tool_choice"]
        assert ours["tools"][0]["name"] == recorded["tools"][0]["name"]
