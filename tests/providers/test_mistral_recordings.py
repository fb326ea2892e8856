"""Every recorded Mistral stream assembles to its expected result through the
`mistral-conversations` translator, whole and cut at arbitrary offsets; every recorded Mistral
HTTP error maps to its category's failure code."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from compat_fixtures import check_recording, error_cases, load, split, stream_cases, translate
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from modelwire.adapters.providers.protocols.mistral_conversations import PROTOCOL
from modelwire.adapters.providers.protocols.mistral_errors import refine_mistral_http_error
from modelwire.policy import DEFAULT_RETRYABLE_CODES
from modelwire.wire.status import failure_for_status

API = "mistral-conversations"
STREAMS = stream_cases("mistral")
ERRORS = error_cases("mistral")
CATEGORY_CODES = {
    "rate_limit": "RATE_LIMIT",
    "quota": "QUOTA",
    "context_length": "CONTEXT_WINDOW_EXCEEDED",
    "auth": "AUTH",
    "not_found": "MODEL_NOT_FOUND",
    "invalid_request": "INVALID_REQUEST",
    "server": "SERVER",
    "overloaded": "SERVER",
}


def _check(reads: list[bytes], expected: dict[str, Any]) -> None:
    asm, chunks = translate(PROTOCOL, reads)
    check_recording(API, "mistral", asm, expected, chunks)


def test_mistral_folder_holds_every_recording() -> None:
    assert len(STREAMS) == 12
    assert len(ERRORS) == 4


@pytest.mark.parametrize("sse", STREAMS)
def test_mistral_recording_assembles_to_expected_whole(sse: Path) -> None:
    body, expected = load(sse)
    _check([body], expected)


@pytest.mark.parametrize("sse", STREAMS)
@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=st.data())
def test_mistral_recording_assembles_to_expected_rechunked(sse: Path, data: st.DataObject) -> None:
    body, expected = load(sse)
    cuts = data.draw(st.sets(st.integers(1, len(body) - 1), max_size=40))
    _check(split(body, cuts), expected)


SMALL = [p for p in STREAMS if p.values[0].stat().st_size <= 1200]


@pytest.mark.parametrize("sse", SMALL)
def test_mistral_small_recording_assembles_cut_at_every_offset(sse: Path) -> None:
    body, expected = load(sse)
    for cut in range(1, len(body)):
        _check([body[:cut], body[cut:]], expected)


@pytest.mark.parametrize("path", ERRORS)
def test_mistral_http_error_maps_to_its_category_code(path: Path) -> None:
    http = json.loads(path.read_text())
    expected = json.loads(path.with_name(path.name.replace(".http", ".expected")).read_text())
    base = failure_for_status(http["status"], http["body"], http["headers"], provider="Mistral")
    error = refine_mistral_http_error(base, http["body"], http["headers"])
    assert error.code == CATEGORY_CODES[expected["category"]]
    assert error.status == expected["status"]
    assert (error.code in DEFAULT_RETRYABLE_CODES) == expected["retryable"]
    message = expected["error"]["message"]
    if isinstance(message, str):
        assert message in error.message
    else:  # a validation error: the message names the field and what is wrong with it
        detail = message["detail"][0]
        assert ".".join(detail["loc"]) in error.message
        assert detail["msg"] in error.message
