"""The recorded structured-output streams (`../shared/fixtures/structured-output/`): each one on
the Chat Completions, Responses and Anthropic protocols assembles to its expected result, whole
and re-chunked; and served over loopback HTTP to a route asked for the recorded schema, its
answer validates against that schema (a refusal ends in CONTENT_FILTER; Anthropic's forced
answer tool becomes the answer's text). The Gemini recordings belong to the native Gemini
protocol (not served yet) and are counted by the inventory test."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from providers_fixtures import FIXTURES, MockServer, Reply, check_assembled, load_case

from modelwire import Error, GenerateOptions, LlmRuntime, OutputSchema, Stop, user_message
from modelwire.adapters.providers import ProvidersAdapter
from modelwire.adapters.providers.protocols import translate_sse
from modelwire.assembler import BlockAssembler

FOLDER = FIXTURES / "structured-output"
APIS = {
    "chat": "openai-completions",
    "responses": "openai-responses",
    "anthropic": "anthropic-messages",
}


def _cases() -> list[Any]:
    out = []
    for sse in sorted(FOLDER.glob("*.sse")):
        protocol = json.loads(sse.with_suffix(".expected.json").read_text())["extras"].get(
            "protocol"
        )
        if protocol in APIS:
            out.append(pytest.param(APIS[protocol], sse, id=sse.stem))
    return out


CASES = _cases()


def test_the_folder_holds_the_three_protocols_recordings() -> None:
    assert len(CASES) == 8


def _schema(api: str, request: dict[str, Any]) -> OutputSchema:
    if api == "openai-completions":
        spec = request["response_format"]["json_schema"]
        return OutputSchema(spec["name"], spec["schema"], spec.get("description"))
    if api == "openai-responses":
        fmt = request["text"]["format"]
        return OutputSchema(fmt["name"], fmt["schema"], fmt.get("description"))
    if "output_format" in request:
        return OutputSchema("answer", request["output_format"]["schema"])
    tool = request["tools"][0]
    return OutputSchema(tool["name"], tool["input_schema"], tool.get("description"))


def _assemble(api: str, reads: list[bytes]) -> tuple[BlockAssembler, list[Any]]:
    asm = BlockAssembler()
    chunks = translate_sse(api, reads, provider="fixture-route", model="fixture-model")
    for chunk in chunks:
        asm.push(chunk)
    return asm, chunks


@pytest.mark.parametrize(("api", "sse"), CASES)
def test_structured_stream_assembles_to_expected_whole(api: str, sse: Path) -> None:
    body, expected = load_case(sse)
    asm, chunks = _assemble(api, [body])
    check_assembled(api, asm, expected, chunks)


@pytest.mark.parametrize(("api", "sse"), CASES)
@settings(
    max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=st.data())
def test_structured_stream_assembles_to_expected_rechunked(
    api: str, sse: Path, data: st.DataObject
) -> None:
    body, expected = load_case(sse)
    cuts = sorted(data.draw(st.sets(st.integers(1, max(1, len(body) - 1)), max_size=30)))
    reads = [body[a:b] for a, b in zip([0, *cuts], [*cuts, len(body)], strict=True)]
    asm, chunks = _assemble(api, reads)
    check_assembled(api, asm, expected, chunks)


@pytest.mark.parametrize(("api", "sse"), CASES)
async def test_recorded_answer_validates_against_the_recorded_schema(api: str, sse: Path) -> None:
    body, expected = load_case(sse)
    request = json.loads(sse.with_suffix(".request.json").read_text())
    output = _schema(api, request)
    async with MockServer([Reply(reads=[body])]) as server:
        profile = {
            "api": api,
            "base_url": server.url + "/v1",
            "api_key_env": "K",
            "models": [{"id": "m"}],
        }
        rt = LlmRuntime()
        ProvidersAdapter.from_config({"providers": {"route": profile}}, env={"K": "k"}).register(rt)
        result = await rt.generate(
            GenerateOptions("route", "m", (user_message("q"),), output=output)
        )
    if expected["extras"].get("refusal"):
        assert isinstance(result.finish, Error)
        assert result.finish.failure.code == "CONTENT_FILTER"
        return
    assert result.finish == Stop()
    text = "".join(getattr(b, "text", "") for b in result.message.content)
    want = expected["extras"].get("structured_json")
    if want is None:
        want = (
            json.loads(expected["text"])
            if expected["text"]
            else expected["tool_calls"][0]["arguments"]
        )
    assert json.loads(text) == want
