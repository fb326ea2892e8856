"""Forward compatibility, fuzzed over every recorded stream of the three collections: events,
items, blocks, parts, tool calls and fields of types no translator knows are inserted at random
places (hypothesis; `unknown_inject`) and the assembled result stays what it was — finish and
failure code, blocks, streamed deltas, usage and the replay envelope (leaving out what forward
compatibility adds to it: the kept parts and the report). An inserted part is kept, so it is
inserted only where the stream is not empty without it (there it would be content), and a
completed stream reports it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from unknown_inject import FAMILIES, mutate, parse, serialize, summary, translate

from modelwire.assembler import BlockAssembler

SHARED = Path(__file__).resolve().parents[2] / ".." / "shared"
_FOLDERS = {
    # folder: (family, translator) — None: by the recording (dialect or extras.protocol)
    "anthropic-messages": ("anthropic", "anthropic-messages"),
    "azure-openai": None,
    "bedrock-converse": ("converse", "bedrock-converse-stream"),
    "bedrock-invoke": ("anthropic", "anthropic-bedrock"),
    "deepseek-chat": ("deepseek", "deepseek"),
    "google-generative-ai": ("gemini", "google-generative-ai"),
    "mistral": ("mistral", "mistral-conversations"),
    "ollama-local": ("chat", "openai-completions"),
    "openai-chat": ("chat", "openai-completions"),
    "openai-responses": ("responses", "openai-responses"),
    "structured-output": None,
}
_BY_PROTOCOL = {
    "anthropic": ("anthropic", "anthropic-messages"),
    "gemini": ("gemini", "google-generative-ai"),
    "chat": ("chat", "openai-completions"),
    "responses": ("responses", "openai-responses"),
}


def _kind(folder: str, path: Path) -> tuple[str, str]:
    known = _FOLDERS[folder]
    if known is not None:
        return known
    if folder == "azure-openai":
        body = path.read_bytes()
        if b'"type":"response.' in body:
            return "responses", "azure-openai-responses"
        return "chat", "azure-openai-completions"
    expected = json.loads(path.with_suffix(".expected.json").read_text())
    return _BY_PROTOCOL[expected["extras"]["protocol"]]


def _cases() -> list[Any]:
    out = []
    for collection in ("fixtures", "fixtures3"):
        root = SHARED / collection
        if not root.is_dir():
            raise RuntimeError(f"recorded fixtures absent: {root} (CI must fail, not skip)")
        for folder in sorted(_FOLDERS):
            for path in sorted(
                [*(root / folder).glob("*.sse"), *(root / folder).glob("*.eventstream")]
            ):
                if path.with_suffix(".expected.json").is_file():
                    family, api = _kind(folder, path)
                    out.append(
                        pytest.param(family, api, path, id=f"{collection}/{folder}/{path.stem}")
                    )
    return out


CASES = _cases()
OPS = st.lists(
    st.tuples(st.sampled_from(["field", "event", "part", "delta", "frame"]), st.integers(0, 2**32)),
    min_size=1,
    max_size=6,
)


def test_the_fuzzer_covers_every_recording_of_the_three_collections() -> None:
    assert len(CASES) >= 217 + 117


@pytest.mark.slow
@pytest.mark.parametrize(("family", "api", "path"), CASES)
@settings(
    max_examples=5,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(ops=OPS)
def test_unknown_things_leave_the_assembled_result_unchanged(
    family: str, api: str, path: Path, ops: list[tuple[str, int]]
) -> None:
    body = path.read_bytes()
    binary = path.suffix == ".eventstream"
    events = parse(body, binary)
    original = summary(translate(api, body))
    assert summary(translate(api, serialize(events, binary))) == original  # the round trip
    parts = original[1] != "EMPTY_RESPONSE"
    mutated = mutate(events, FAMILIES[family], ops, parts)
    chunks = translate(api, serialize(mutated, binary))
    assert summary(chunks) == original
    asm = BlockAssembler()
    for chunk in chunks:
        asm.push(chunk)
    state = asm.replay_state
    inserted_part = parts and any(op == "part" for op, _ in ops) and family != "deepseek"
    if state is not None and inserted_part and "response" in dir(state):
        response = state.response
        assert response.get("extras", {}).get("unknown"), "an inserted part was not reported"
