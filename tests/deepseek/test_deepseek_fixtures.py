"""Recorded DeepSeek streams and errors from ../shared/fixtures, served over loopback HTTP.

Each `.sse` body is served whole and re-chunked at random byte boundaries (hypothesis); the
chunks must assemble to the neutral `.expected.json` (text, reasoning, raw tool arguments,
finish, usage buckets), and the finish's replay state names the stream's own `id` and `model`
(read from the `.sse` itself). Each DeepSeek error must map to the code its category implies.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from deepseek_helpers import (
    FIXTURES,
    Folded,
    Server,
    collect,
    fold,
    json_error,
    make_adapter,
    options,
    raw_response,
)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from modelwire import (
    LlmError,
    LlmRuntime,
    MaxTokens,
    ModelSource,
    ReasoningBlock,
    ReplayEnvelope,
    Stop,
    ToolCallBlock,
    ToolCalls,
)

STREAMS = FIXTURES / "deepseek-chat"
ERRORS = FIXTURES / "errors"


def _streams() -> list[Path]:
    return sorted(STREAMS.glob("*.sse")) if STREAMS.is_dir() else []


def _need(folder: Path) -> None:
    if not folder.is_dir():
        pytest.fail(f"{folder} is not available (shared fixtures missing)")


_FINISH = {"stop": Stop, "tool_calls": ToolCalls, "length": MaxTokens}


def check(result: Folded, expected: dict[str, Any]) -> None:
    assert result.text == expected["text"]
    assert result.reasoning == expected["reasoning"]
    assert result.tool_calls == [
        {"id": t["id"], "name": t["name"], "arguments_raw": t["arguments_raw"]}
        for t in expected["tool_calls"]
    ]
    assert result.finish is not None
    assert isinstance(result.finish.reason, _FINISH[expected["finish"]])
    want = expected["usage"]
    if want is None:
        assert result.usage is None
        return
    assert result.usage is not None
    got = result.usage.usage
    assert got.input_tokens == want["input_uncached"]
    assert (got.cache_read_tokens or 0) == (want["cache_read"] or 0)
    assert got.cache_write_tokens == want["cache_write"]
    assert got.output_tokens == want["output"]
    assert got.reasoning_tokens == want["reasoning"]
    # chunk protocol: usage right before the single terminal finish
    assert result.kinds[-2:] == ["usage", "finish"] and result.kinds.count("finish") == 1


def _expected(path: Path) -> dict[str, Any]:
    return json.loads(path.with_suffix(".expected.json").read_text())


def _recorded_response(path: Path) -> ReplayEnvelope:
    """The replay state a recorded stream's finish must carry: its first `id` and `model`."""
    response: dict[str, str] = {}
    for line in path.read_text().splitlines():
        if line.startswith("data:") and line[5:].strip() != "[DONE]":
            payload = json.loads(line[5:])
            for wire, key in (("id", "response_id"), ("model", "response_model")):
                if payload.get(wire) and key not in response:
                    response[key] = payload[wire]
    assert response, f"{path.name} names no response id or model"
    return ReplayEnvelope(response)


@pytest.mark.parametrize("path", [pytest.param(p, id=p.stem) for p in _streams()])
async def test_fixture_stream_whole_assembles_to_expected(server: Server, path: Path) -> None:
    server.queue(raw_response(path.read_bytes()))
    result = fold(await collect(make_adapter(server).stream(options())))
    check(result, _expected(path))
    assert result.finish is not None
    assert result.finish.replay_state == _recorded_response(path)


def test_fixture_streams_present() -> None:
    _need(STREAMS)
    assert len(_streams()) >= 8


@pytest.mark.parametrize("path", [pytest.param(p, id=p.stem) for p in _streams()])
@settings(max_examples=8, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
async def test_fixture_stream_rechunked_assembles_to_expected(
    server: Server, path: Path, data: st.DataObject
) -> None:
    body = path.read_bytes()
    sizes = data.draw(st.lists(st.integers(1, 97), min_size=1, max_size=400))
    server.queue(raw_response(body, pieces=sizes))
    check(fold(await collect(make_adapter(server).stream(options()))), _expected(path))


_CATEGORY_CODE = {
    "rate_limit": "RATE_LIMIT",
    "quota": "QUOTA",
    "context_length": "CONTEXT_WINDOW_EXCEEDED",
    "auth": "AUTH",
    "invalid_request": "INVALID_REQUEST",
    "server": "SERVER",
    "overloaded": "SERVER",
}


def _deepseek_errors() -> list[Path]:
    return sorted(ERRORS.glob("deepseek*.http.json")) if ERRORS.is_dir() else []


@pytest.mark.parametrize(
    "path", [pytest.param(p, id=p.name.split(".")[0]) for p in _deepseek_errors()]
)
async def test_fixture_deepseek_error_over_http_maps_to_category(
    server: Server, path: Path
) -> None:
    http = json.loads(path.read_text())
    expected = json.loads(
        path.with_name(path.name.replace(".http.json", ".expected.json")).read_text()
    )
    headers = {
        k: v
        for k, v in http["headers"].items()
        if k.lower() not in ("content-length", "content-type")
    }
    server.queue(json_error(http["status"], http["body"], headers))
    with pytest.raises(LlmError) as info:
        await collect(make_adapter(server).stream(options()))
    assert info.value.code == _CATEGORY_CODE.get(expected["category"], f"HTTP_{http['status']}")
    assert info.value.failure.status == http["status"]
    assert expected["error"]["message"] in info.value.message
    assert "sk-test-key" not in info.value.message


def test_fixture_error_folder_has_deepseek_errors() -> None:
    _need(ERRORS)
    assert _deepseek_errors()


async def test_fixture_tool_call_stream_through_runtime_generate(server: Server) -> None:
    path = STREAMS / "ds-reasoner-tool-cache-hit.sse"
    if not path.is_file():
        pytest.fail(f"{path} is not available (shared fixtures missing)")
    expected = _expected(path)
    server.queue(raw_response(path.read_bytes(), pieces=[13] * 2000))
    rt = LlmRuntime()
    rt.register_adapter(["deepseek-official"], make_adapter(server))
    result = await rt.generate(options(provider="deepseek-official"))
    [call] = expected["tool_calls"]
    assert result.finish == ToolCalls()
    assert result.message.content == (
        ReasoningBlock(expected["reasoning"]),
        ToolCallBlock(call["id"], call["name"], call["arguments_raw"]),
    )
    assert result.usage is not None and result.usage.cache_read_tokens == 320
    # the response's id and model ride on the finish into the assistant message's source
    assert result.replay_state == _recorded_response(path)
    assert result.message.source == ModelSource(
        "deepseek-official", "deepseek-v4-flash", result.replay_state
    )
