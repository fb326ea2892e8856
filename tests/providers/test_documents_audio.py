"""Documents and audio in user messages reaching each protocol in its documented shape, over a
real loopback server that records the request (it answers 400 after recording, so each test
reads the body the adapter actually sent), and refused with UNSUPPORTED_CONTENT before any I/O
where the protocol or the model cannot take them.

Shapes, from each provider's API reference: Anthropic Messages "PDF support" (a ``document``
block with a ``base64``, ``text`` or ``url`` source and a ``title``); OpenAI Chat Completions
"File inputs" (a ``file`` part with ``filename`` and ``file_data`` as a data URL) and "Audio
inputs" (``input_audio`` with ``data`` and ``format`` ``wav``/``mp3``); OpenAI Responses
``input_file`` (``filename`` + ``file_data``, or ``file_url``); Gemini API "Document
understanding" / "Audio understanding" (``inlineData`` {mimeType, data}, ``fileData`` {mimeType,
fileUri}); Bedrock Converse ``DocumentBlock`` (``{"document": {"format": "pdf", "name",
"source": {"bytes"}}}``, names of letters, digits, single spaces, hyphens, parentheses and
brackets).
"""

from __future__ import annotations

import base64
import json
from typing import Any

import msgspec
import pytest
from providers_fixtures import MockServer, Reply

import modelwire as mw
from modelwire.adapters.providers import ProvidersAdapter
from modelwire.errors import ErrorCode, LlmError

PDF = b"%PDF-1.4\n1 0 obj<<>>endobj\ntrailer<<>>\n%%EOF\n"
B64 = base64.b64encode(PDF).decode()
WAV = b"RIFF\x24\x00\x00\x00WAVEfmt " + bytes(range(32))
WAV64 = base64.b64encode(WAV).decode()
ENV = {
    "ANTHROPIC_API_KEY": "sk-ant-test-1",
    "OPENAI_API_KEY": "sk-test-1",
    "GEMINI_API_KEY": "g-test-1",
    "AWS_BEARER_TOKEN_BEDROCK": "br-test-1",
    "MISTRAL_API_KEY": "m-test-1",
}
REFUSE = Reply(status=400, body='{"error": {"type": "invalid_request_error", "message": "stop"}}')


async def _sent(
    routes: dict[str, Any], provider: str, model: str, blocks: list[mw.ContentBlock]
) -> tuple[dict[str, Any], int]:
    """The body the adapter sent for one user message of `blocks`, and the request count."""
    async with MockServer([REFUSE]) as server:
        for profile in routes.values():
            profile["base_url"] = server.url + profile.get("base_url", "")
        adapter = ProvidersAdapter.from_config({"providers": routes}, env=ENV)
        options = mw.GenerateOptions(provider, model, (mw.user_message(blocks),))
        with pytest.raises(LlmError) as caught:  # the server refuses once it has recorded
            async for _ in adapter.stream(options):
                pass
    assert caught.value.status == 400, caught.value
    return (server.bodies[0] if server.bodies else {}), len(server.bodies)


def _doc(**extra: Any) -> mw.DocumentBlock:
    return mw.DocumentBlock("application/pdf", **({"data": PDF} | extra))


async def test_anthropic_document_blocks_base64_text_and_url() -> None:
    blocks: list[mw.ContentBlock] = [
        mw.TextBlock("Summarize these."),
        _doc(name="report.pdf"),
        mw.DocumentBlock("text/plain", data="plain notes ✓".encode()),
        mw.DocumentBlock("application/pdf", url="https://example.com/a.pdf"),
    ]
    body, _ = await _sent({"anthropic": {}}, "anthropic", "claude-haiku-4-5", blocks)
    content = body["messages"][0]["content"]
    assert content[0] == {"type": "text", "text": "Summarize these."}
    assert content[1]["type"] == "document" and content[1]["title"] == "report.pdf"
    assert content[1]["source"] == {"type": "base64", "media_type": "application/pdf", "data": B64}
    assert content[2]["source"] == {
        "type": "text",
        "media_type": "text/plain",
        "data": "plain notes ✓",
    }
    assert content[3]["source"] == {"type": "url", "url": "https://example.com/a.pdf"}


async def test_openai_chat_file_part_takes_the_name_as_filename_and_input_audio() -> None:
    route = {
        "api": "openai-completions",
        "base_url": "/v1",
        "api_key_env": "OPENAI_API_KEY",
        "models": [{"id": "gpt-4o-audio-preview", "input": ["text", "image", "audio"]}],
    }
    blocks: list[mw.ContentBlock] = [
        _doc(name="report.pdf"),
        mw.AudioBlock("audio/wav", WAV),
        mw.AudioBlock("audio/mpeg", b"ID3mp3bytes"),
    ]
    body, _ = await _sent({"oa": route}, "oa", "gpt-4o-audio-preview", blocks)
    parts = body["messages"][-1]["content"]
    assert parts[0] == {
        "type": "file",
        "file": {"filename": "report.pdf", "file_data": f"data:application/pdf;base64,{B64}"},
    }
    assert parts[1] == {"type": "input_audio", "input_audio": {"data": WAV64, "format": "wav"}}
    assert parts[2]["input_audio"]["format"] == "mp3"


async def test_openai_responses_input_file_by_data_and_by_url() -> None:
    blocks: list[mw.ContentBlock] = [
        _doc(name="r.pdf"),
        mw.DocumentBlock("application/pdf", url="https://example.com/b.pdf"),
    ]
    body, _ = await _sent({"openai": {"base_url": "/v1"}}, "openai", "gpt-4.1", blocks)
    parts = body["input"][-1]["content"]
    assert parts[0] == {
        "type": "input_file",
        "filename": "r.pdf",
        "file_data": f"data:application/pdf;base64,{B64}",
    }
    assert parts[1] == {"type": "input_file", "file_url": "https://example.com/b.pdf"}


async def test_gemini_inline_data_file_data_and_inline_audio() -> None:
    route = {
        "base_url": "/v1beta",
        "models": [{"id": "gemini-2.5-flash", "input": ["text", "image", "audio"]}],
    }
    blocks: list[mw.ContentBlock] = [
        _doc(),
        mw.DocumentBlock("application/pdf", url="https://example.com/c.pdf"),
        mw.AudioBlock("audio/flac", b"fLaC0000"),
    ]
    body, _ = await _sent({"google": route}, "google", "gemini-2.5-flash", blocks)
    parts = body["contents"][-1]["parts"]
    assert parts[0] == {"inlineData": {"mimeType": "application/pdf", "data": B64}}
    assert parts[1] == {
        "fileData": {"mimeType": "application/pdf", "fileUri": "https://example.com/c.pdf"}
    }
    assert parts[2] == {
        "inlineData": {"mimeType": "audio/flac", "data": base64.b64encode(b"fLaC0000").decode()}
    }


async def test_bedrock_document_block_with_a_sanitized_name() -> None:
    route = {"region": "us-east-1"}
    blocks: list[mw.ContentBlock] = [
        mw.TextBlock("Read it."),
        _doc(name="Q3 report_final (v2).pdf"),
        mw.DocumentBlock("text/plain", data=b"notes"),
    ]
    body, _ = await _sent(
        {"amazon-bedrock": route}, "amazon-bedrock", "amazon.nova-lite-v1:0", blocks
    )
    content = body["messages"][0]["content"]
    assert content[1] == {
        "document": {"format": "pdf", "name": "Q3 report-final (v2)", "source": {"bytes": B64}}
    }
    assert content[2]["document"]["format"] == "txt"
    assert content[2]["document"]["name"] == "document-3"


@pytest.mark.parametrize(
    ("routes", "provider", "model", "block", "needle"),
    [
        ({"mistral": {}}, "mistral", "mistral-large-latest", _doc(), "cannot send documents"),
        ({"openai": {}}, "openai", "gpt-4", _doc(), "does not accept documents"),
        ({"openai": {}}, "openai", "gpt-4.1", mw.AudioBlock("audio/wav", WAV), "accept audio"),
        (
            {"openai": {}},
            "openai",
            "gpt-4.1",
            mw.DocumentBlock("text/plain", data=b"x"),
            "PDF documents only",
        ),
        (
            {"amazon-bedrock": {"region": "us-east-1"}},
            "amazon-bedrock",
            "amazon.nova-lite-v1:0",
            mw.DocumentBlock("application/pdf", url="https://example.com/d.pdf"),
            "by URL",
        ),
        (
            {"amazon-bedrock": {"region": "us-east-1"}},
            "amazon-bedrock",
            "amazon.nova-lite-v1:0",
            mw.DocumentBlock("application/pdf", data=b"%PDF" + bytes(4_500_001), name="big.pdf"),
            "at most 4.5 MB (4500000 bytes)",
        ),
    ],
)
async def test_refused_before_any_request_naming_what_is_missing(
    routes: dict[str, Any], provider: str, model: str, block: mw.ContentBlock, needle: str
) -> None:
    async with MockServer([REFUSE]) as server:
        for profile in routes.values():
            profile["base_url"] = server.url
        adapter = ProvidersAdapter.from_config({"providers": routes}, env=ENV)
        options = mw.GenerateOptions(provider, model, (mw.user_message([block]),))
        with pytest.raises(LlmError) as caught:
            async for _ in adapter.stream(options):
                pass
    assert caught.value.code == ErrorCode.UNSUPPORTED_CONTENT, caught.value
    assert needle in str(caught.value) and model in str(caught.value)
    assert server.bodies == []


@pytest.mark.parametrize(
    ("block", "field"),
    [
        (mw.DocumentBlock("application/pdf"), "data"),
        (mw.DocumentBlock("application/pdf", data=PDF, url="https://x.example/a.pdf"), "data"),
        (mw.DocumentBlock("image/png", data=PDF), "media_type"),
        (mw.DocumentBlock("application/pdf", url="ftp://x/a.pdf"), "url"),
        (mw.AudioBlock("audio/wav", b""), "data"),
        (mw.AudioBlock("video/mp4", b"x"), "media_type"),
    ],
)
async def test_malformed_blocks_are_invalid_options_at_the_runtime(
    block: mw.ContentBlock, field: str
) -> None:
    rt = mw.LlmRuntime()
    ProvidersAdapter.from_config({"providers": {"openai": {}}}, env=ENV).register(rt)
    chunks = [
        c
        async for c in rt.stream(
            mw.GenerateOptions("openai", "gpt-4.1", (mw.user_message([block]),))
        )
    ]
    finish = chunks[-1]
    assert isinstance(finish, mw.Finish) and isinstance(finish.reason, mw.Error)
    assert finish.reason.failure.code == ErrorCode.INVALID_OPTION
    assert f"content[0].{field}" in finish.reason.failure.message


def test_the_block_round_trips_through_json_bytes_exact() -> None:
    message = mw.user_message([_doc(name="r.pdf"), mw.AudioBlock("audio/wav", WAV)])
    encoded = msgspec.json.encode(message)
    raw = json.loads(encoded)
    assert raw["content"][0] == {
        "type": "document",
        "media_type": "application/pdf",
        "data": B64,
        "name": "r.pdf",
    }
    back = msgspec.json.decode(encoded, type=mw.Message)
    assert back == message and back.content[0] == _doc(name="r.pdf")


async def test_the_session_log_keeps_the_document_and_a_later_turn_resends_it_exactly(
    tmp_path: Any,
) -> None:
    """Turn 1 sends a PDF; turn 2 runs in a new runtime and agent over the same SQLite log file,
    and its request carries the same file part, byte for byte, rebuilt from the log."""
    from providers_fixtures import TEXT_EVENTS

    from modelwire.agent import Agent
    from modelwire.session import open_log

    route = {
        "api": "openai-completions",
        "api_key_env": "OPENAI_API_KEY",
        "models": [{"id": "vision-1", "input": ["text", "image"]}],
    }
    url = f"sqlite:///{tmp_path / 'docs.db'}"
    async with MockServer([Reply(reads=TEXT_EVENTS)]) as server:
        for turn, text in enumerate(([mw.TextBlock("Read:"), _doc(name="r.pdf")], "And again?")):
            rt = mw.LlmRuntime()
            profile = {**route, "base_url": server.url + "/v1"}
            ProvidersAdapter.from_config({"providers": {"oa": profile}}, env=ENV).register(rt)
            log = await open_log(url)
            try:
                agent = Agent(runtime=rt, log=log, provider="oa", model="vision-1")
                result = await agent.run_turn("doc-session", text)
                assert result.reason.kind == "completed", (turn, result.reason)
            finally:
                await log.close()
    first, second = server.bodies
    part = {
        "type": "file",
        "file": {"filename": "r.pdf", "file_data": f"data:application/pdf;base64,{B64}"},
    }
    assert part in first["messages"][-1]["content"]
    assert second["messages"][0] == first["messages"][-1]  # the history, from the log
    assert part in second["messages"][0]["content"]
