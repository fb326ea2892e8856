"""Every recorded stream of the three protocols translates (whole and re-chunked) to its expected
result through `BlockAssembler` (pure path: bytes → SSE → decode → translate, no HTTP)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from providers_fixtures import check_assembled, fixture_cases, load_case

from modelwire.adapters.providers.protocols import translate_sse
from modelwire.assembler import BlockAssembler

APIS = ("openai-completions", "openai-responses", "anthropic-messages")
CASES = [
    pytest.param(api, *case.values, id=f"{api}-{case.id}", marks=case.marks)
    for api in APIS
    for case in fixture_cases(api)
]


def _check(api: str, reads: list[bytes], expected: dict[str, Any]) -> None:
    asm = BlockAssembler()
    chunks = translate_sse(api, reads, provider="fixture-route", model="fixture-model")
    for chunk in chunks:
        asm.push(chunk)
    check_assembled(api, asm, expected, chunks)


@pytest.mark.parametrize(("api", "sse"), CASES)
def test_fixture_stream_assembles_to_expected_whole(api: str, sse: Path) -> None:
    body, expected = load_case(sse)
    _check(api, [body], expected)


@pytest.mark.parametrize(("api", "sse"), CASES)
@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=st.data())
def test_fixture_stream_assembles_to_expected_rechunked(
    api: str, sse: Path, data: st.DataObject
) -> None:
    body, expected = load_case(sse)
    cuts = sorted(data.draw(st.sets(st.integers(1, max(1, len(body) - 1)), max_size=40)))
    reads = [body[a:b] for a, b in zip([0, *cuts], [*cuts, len(body)], strict=True)]
    _check(api, reads, expected)
