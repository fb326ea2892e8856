"""Every recorded Gemini stream (`google-generative-ai/`, 23) and the three Gemini recordings of
`structured-output/` assemble to their expected result through `GoogleTranslator`, whole and
split at arbitrary offsets (bytes → SSE with CRLF framing → decode → translate, no HTTP)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from google_fixtures import (
    GEMINI,
    STRUCTURED,
    assemble,
    check_gemini,
    cut,
    load_case,
    stream_cases,
    structured_cases,
    translate,
)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from modelwire.vocab import TextBlock

STREAMS = stream_cases()
STRUCTURED_STREAMS = structured_cases()


def test_the_gemini_folder_holds_its_23_streams_and_structured_output_its_3() -> None:
    assert len(STREAMS) == 23
    assert len(STRUCTURED_STREAMS) == 3
    assert GEMINI.is_dir() and STRUCTURED.is_dir()


@pytest.mark.parametrize("sse", STREAMS)
def test_recorded_stream_assembles_to_expected_whole(sse: Path) -> None:
    body, expected = load_case(sse)
    chunks, _ = translate([body])
    check_gemini(assemble(chunks), expected, chunks)


@pytest.mark.parametrize("sse", STREAMS)
@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=st.data())
def test_recorded_stream_assembles_to_expected_rechunked(sse: Path, data: st.DataObject) -> None:
    body, expected = load_case(sse)
    cuts = data.draw(st.sets(st.integers(1, max(1, len(body) - 1)), max_size=40))
    chunks, _ = translate(cut(body, cuts))
    check_gemini(assemble(chunks), expected, chunks)


@pytest.mark.parametrize("sse", STREAMS[:3])
def test_recorded_stream_split_at_every_offset_of_its_first_event(sse: Path) -> None:
    """Cuts inside the CRLF CRLF separator and inside multi-byte characters change nothing."""
    body, expected = load_case(sse)
    first = body.index(b"\r\n\r\n") + 4
    for offset in range(1, min(first + 2, len(body))):
        chunks, _ = translate([body[:offset], body[offset:]])
        check_gemini(assemble(chunks), expected, chunks)


@pytest.mark.parametrize("sse", STRUCTURED_STREAMS)
def test_structured_output_recording_answers_its_schema_as_text(sse: Path) -> None:
    """The JSON answer streams as text parts (the signature on the Gemini 3 text part kept),
    parses to `extras.structured_json`, whole and split into one read per byte run."""
    body, expected = load_case(sse)
    assert expected["extras"]["structured_source"] == "text"
    for reads in ([body], cut(body, range(7, len(body), 97))):
        chunks, _ = translate(reads)
        asm = assemble(chunks)
        check_gemini(asm, expected, chunks)
        text = "".join(b.text for b in asm.blocks() if isinstance(b, TextBlock))
        assert json.loads(text) == expected["extras"]["structured_json"]


@pytest.mark.parametrize("sse", STRUCTURED_STREAMS)
def test_structured_output_recording_request_uses_a_json_mime_type(sse: Path) -> None:
    """What the recordings pin about the request: ``responseMimeType: application/json`` plus a
    schema, ``responseJsonSchema`` (JSON Schema) in two of them and the older OpenAPI-subset
    ``responseSchema`` in one; the builder sends the JSON Schema dialect."""
    config = json.loads(sse.with_suffix(".request.json").read_text())["generationConfig"]
    assert config["responseMimeType"] == "application/json"
    assert ("responseJsonSchema" in config) != ("responseSchema" in config)


def test_usage_is_the_last_usage_metadata_of_the_stream() -> None:
    """pydantic's 2.0 recording reports promptTokenCount 15 mid-stream and 13 at the end."""
    body, expected = load_case(GEMINI / "pydantic-gemini20-flash-exp-text.sse")
    assert expected["extras"]["prompt_token_counts_seen"] == [15, 15, 13]
    _, record = translate([body])
    assert record.input == 13 == expected["usage"]["input_uncached"]


def test_code_execution_parts_are_skipped_and_mark_a_server_tool_loop() -> None:
    body, expected = load_case(GEMINI / "pydantic-gemini3-flash-code-execution.sse")
    assert expected["extras"]["server_side_parts"] == ["executableCode", "codeExecutionResult"]
    chunks, record = translate([body])
    check_gemini(assemble(chunks), expected, chunks)
    assert record.server_tool_loop  # the prompt count sums several model calls


def test_grounding_metadata_is_not_content() -> None:
    body, expected = load_case(GEMINI / "pydantic-gemini25-pro-google-search-grounding.sse")
    assert expected["extras"]["grounding"]["grounding_chunks"] == 5
    chunks, record = translate([body])
    check_gemini(assemble(chunks), expected, chunks)
    assert record.server_tool_loop  # toolUsePromptTokenCount reported: no bucket counts it
