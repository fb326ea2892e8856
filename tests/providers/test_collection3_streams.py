"""Every recorded stream of the third collection (`../shared/fixtures3`, all folders but
`deepseek-chat`, which `tests/deepseek/test_deepseek_fixtures.py` serves to the DeepSeek
adapter) assembles to its expected result through the translator of its protocol, whole and
re-chunked at random byte boundaries (hypothesis): bytes → framing (SSE, or the AWS event
stream) → decode → translate → `BlockAssembler`, no HTTP.

The expected values this suite judges wrong are overruled in `collection3.OVERRULED`, each with
its reason; on top of the neutral form, a completed response's replay envelope must keep every
part no block carries, report what the translator did not know, and say when its finish was
inferred (`collection3.check_forward_compat`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from bedrock_fixtures import check as check_bedrock
from collection3 import (
    COUNTS,
    OVERRULED,
    Overrule,
    check_forward_compat,
    cut,
    expectation,
    recordings,
    stream_params,
)
from compat_fixtures import check_recording, dialect_of
from google_fixtures import check_gemini
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from providers_fixtures import check_assembled

from modelwire.adapters.providers.protocols import translate_sse
from modelwire.assembler import BlockAssembler
from modelwire.vocab import StreamChunk

FOLDERS = [name for name in COUNTS if name != "deepseek-chat"]
CASES = stream_params(FOLDERS)

_API = {
    "openai-chat": "openai-completions",
    "openai-responses": "openai-responses",
    "anthropic-messages": "anthropic-messages",
    "google-generative-ai": "google-generative-ai",
    "mistral": "mistral-conversations",
    "bedrock-converse": "bedrock-converse-stream",
    "bedrock-invoke": "anthropic-bedrock",
}
_AZURE = {"chat": "azure-openai-completions", "responses": "azure-openai-responses"}


def _api(name: str, body: bytes) -> str:
    return _AZURE[dialect_of(body)] if name == "azure-openai" else _API[name]


def _check(
    name: str,
    api: str,
    chunks: list[StreamChunk],
    expected: dict[str, Any],
    rule: Overrule | None,
) -> BlockAssembler:
    asm = BlockAssembler()
    for chunk in chunks:
        asm.push(chunk)
    outcome = rule.outcome if rule is not None else None
    if name in ("openai-chat", "openai-responses", "anthropic-messages", "bedrock-invoke"):
        family = "anthropic-messages" if name == "bedrock-invoke" else api
        check_assembled(family, asm, expected, chunks, outcome=outcome, envelope_api=api)
    elif name == "google-generative-ai":
        check_gemini(asm, expected, chunks, outcome=outcome)
    elif name == "bedrock-converse":
        check_bedrock(chunks, expected, outcome[0] if outcome else None)
    else:
        dialect = "mistral" if name == "mistral" else dialect_of_api(api)
        check_recording(api, dialect, asm, expected, chunks, outcome=outcome)
    return asm


def dialect_of_api(api: str) -> str:
    return "responses" if api.endswith("responses") else "chat"


def _run(name: str, path: Path, reads: list[bytes]) -> None:
    body = path.read_bytes()
    expected, rule = expectation(name, path)
    api = _api(name, body)
    chunks = translate_sse(api, reads, provider="fixture-route", model="fixture-model")
    asm = _check(name, api, chunks, expected, rule)
    check_forward_compat(path, asm, expected, rule)


def test_collection3_folders_hold_every_recording_the_manifest_lists() -> None:
    for name, (streams, _) in COUNTS.items():
        assert len(recordings(name)) == streams, name
    assert len(CASES) == sum(s for s, _ in COUNTS.values()) - COUNTS["deepseek-chat"][0]


def test_every_overrule_names_a_recording_and_gives_its_reason() -> None:
    names = {f"{n}/{p.stem}" for n in COUNTS for p in recordings(n)}
    for key, rule in OVERRULED.items():
        assert key in names, key
        assert len(rule.reason) > 40 and (rule.outcome or rule.replace or rule.inferred)


@pytest.mark.parametrize(("name", "path"), CASES)
def test_collection3_recording_assembles_to_expected_whole(name: str, path: Path) -> None:
    _run(name, path, [path.read_bytes()])


@pytest.mark.parametrize(("name", "path"), CASES)
@settings(
    max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=st.data())
def test_collection3_recording_assembles_to_expected_rechunked(
    name: str, path: Path, data: st.DataObject
) -> None:
    body = path.read_bytes()
    cuts = data.draw(st.sets(st.integers(1, max(1, len(body) - 1)), max_size=40))
    _run(name, path, cut(body, cuts))
