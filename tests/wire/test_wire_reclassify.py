"""`reclassify`: one way to change an HTTP error's code (and message) that keeps every other fact
of its failure — status, provider Retry-After, request id — for every protocol's error reading."""

from __future__ import annotations

from modelwire.wire.status import failure_for_status, reclassify


def test_reclassify_keeps_status_retry_after_and_request_id() -> None:
    headers = {"retry-after": "7", "x-request-id": "req-7"}
    error = failure_for_status(400, '{"error": {"message": "too long"}}', headers, provider="P")
    moved = reclassify(error, "CONTEXT_WINDOW_EXCEEDED")
    assert (moved.code, moved.message) == ("CONTEXT_WINDOW_EXCEEDED", error.message)
    assert moved.status == 400
    assert moved.failure.provider_retry_after_ms == 7000
    assert moved.failure.request_id == "req-7"
    renamed = reclassify(error, "QUOTA", "P API error (HTTP 400): plan limit")
    assert (renamed.code, renamed.message) == ("QUOTA", "P API error (HTTP 400): plan limit")


def test_reclassify_to_the_same_code_and_message_is_the_same_error() -> None:
    error = failure_for_status(503, "", {}, provider="P")
    assert reclassify(error, error.code) is error
