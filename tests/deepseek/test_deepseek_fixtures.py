"""Recorded DeepSeek streams and errors from ../shared/fixtures (and the third collection's
DeepSeek streams, ../shared/fixtures3/deepseek-chat), served over loopback HTTP.

Each `.sse` body is served whole and re-chunked at random byte boundaries (hypothesis); the
chunks must assemble to the neutral `.expected.json` (text, reasoning, raw tool arguments,
finish, usage buckets), and the finish's replay state names the stream's own `id` and `model`
(read from the `.sse` itself). Each DeepSeek error must map to the code its category implies.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from deepseek_helpers import (
    FIXTURES,
    Server,
    check_folded,
    collect,
    expected_of,
    fold,
    json_error,
    make_adapter,
    options,
    raw_response,
    recorded_response,
)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from modelwire import (
    LlmError,
    LlmRuntime,
    ModelSource,
    ReasoningBlock,
    ToolCallBlock,
    ToolCalls,
)

STREAMS = FIXTURES / "deepseek-chat"
STREAMS3 = FIXTURES.parent / "fixtures3" / "deepseek-chat"  # the third collection (issue 33)
ERRORS = FIXTURES / "errors"


def _streams() -> list[Path]:
    """Both collections' DeepSeek streams (the third's: DeepSeek V4 through the Charm Hyper
    proxy; each sends its finish_reason, so no finish of these is inferred)."""
    return [p for f in (STREAMS, STREAMS3) if f.is_dir() for p in sorted(f.glob("*.sse"))]


def _need(folder: Path) -> None:
    if not folder.is_dir():
        pytest.fail(f"{folder} is not available (shared fixtures missing)")


@pytest.mark.parametrize("path", [pytest.param(p, id=p.stem) for p in _streams()])
async def test_fixture_stream_whole_assembles_to_expected(server: Server, path: Path) -> None:
    server.queue(raw_response(path.read_bytes()))
    result = fold(await collect(make_adapter(server).stream(options())))
    check_folded(result, expected_of(path))
    assert result.finish is not None
    assert result.finish.replay_state == recorded_response(path)


def test_fixture_streams_present() -> None:
    _need(STREAMS)
    _need(STREAMS3)
    assert len(_streams()) >= 8 + 5


@pytest.mark.parametrize("path", [pytest.param(p, id=p.stem) for p in _streams()])
@settings(max_examples=8, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
async def test_fixture_stream_rechunked_assembles_to_expected(
    server: Server, path: Path, data: st.DataObject
) -> None:
    body = path.read_bytes()
    sizes = data.draw(st.lists(st.integers(1, 97), min_size=1, max_size=400))
    server.queue(raw_response(body, pieces=sizes))
    check_folded(fold(await collect(make_adapter(server).stream(options()))), expected_of(path))


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
    expected = expected_of(path)
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
    assert result.replay_state == recorded_response(path)
    assert result.message.source == ModelSource(
        "deepseek-official", "deepseek-v4-flash", result.replay_state
    )
