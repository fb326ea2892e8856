"""The retry invariant checker (spec C22–C25): validates `llm/retry` records against the log.

A test-time companion of `RetryPlugin`: feed it a session's events in order (`check(event)`) or
validate a whole history (`RetryInvariantChecker.from_events(events)`); the first violation raises
`RetryInvariantError` (code `INVARIANT`) naming the seq and the field. It checks the payload
(C22), the position inside an open turn and step and the provider of the latest request header
(C23), the numbering and `retry_id` continuity of every chain (C24) and the pairing of each
`llm/retry-started` with its `llm/retry` (C25). An `llm/fallback` ends the chains of its step
(the new target's retries count from 1, `counting.py`).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Final

from ..errors import ErrorCode, HarnessError
from ..session.events import (
    Event,
    LlmFallback,
    LlmRetry,
    LlmRetryStarted,
    RequestHeader,
    StepEnd,
    StepStart,
    TurnEnd,
    TurnStart,
)
from ..vocab import LlmFailure
from ..vocab.json import MAX_SAFE_INT as _MAX_SAFE_INT
from .counting import ChainKey

__all__ = ["RetryInvariantChecker", "RetryInvariantError", "validate_failure"]

_MAX_DELAY_MS: Final = 2_147_483_647


class RetryInvariantError(HarnessError):
    """A retry record that breaks an invariant; `code` is `INVARIANT`."""

    def __init__(self, message: str) -> None:
        super().__init__(message, ErrorCode.INVARIANT)


def _safe_int(value: object) -> bool:
    return type(value) is int and 0 < value <= _MAX_SAFE_INT


def _text(value: object) -> bool:
    return isinstance(value, str) and bool(value)


def validate_failure(failure: object, where: str) -> None:
    """Check an `LlmFailure` payload field by field; raise `RetryInvariantError` naming it."""
    if not isinstance(failure, LlmFailure):
        raise RetryInvariantError(f"{where}: failure must be an LlmFailure object")
    if not _text(failure.message):
        raise RetryInvariantError(f"{where}: failure.message must be a non-empty string")
    if not _text(failure.code):
        raise RetryInvariantError(f"{where}: failure.code must be a non-empty string")
    status = failure.status
    if status is not None and not (type(status) is int and 100 <= status <= 599):
        raise RetryInvariantError(f"{where}: failure.status must be an integer in 100-599")
    after = failure.provider_retry_after_ms
    if after is not None and (
        isinstance(after, bool)
        or not isinstance(after, (int, float))
        or not math.isfinite(after)
        or after <= 0
    ):
        raise RetryInvariantError(
            f"{where}: failure.provider_retry_after_ms must be a finite number > 0"
        )
    if failure.request_id is not None and not _text(failure.request_id):
        raise RetryInvariantError(f"{where}: failure.request_id must be a non-empty string")


def _validate_record(data: LlmRetry, where: str) -> None:
    if not _text(data.retry_id):
        raise RetryInvariantError(f"{where}: retry_id must be a non-empty string")
    validate_failure(data.failure, where)
    if not _safe_int(data.retry):
        raise RetryInvariantError(f"{where}: retry must be a positive safe integer")
    if not _text(data.provider):
        raise RetryInvariantError(f"{where}: provider must be a non-empty string")
    if not _text(data.policy_key):
        raise RetryInvariantError(f"{where}: policy_key must be a non-empty string")
    if data.mode == "normal":
        if not _safe_int(data.max_retries):
            raise RetryInvariantError(f"{where}: max_retries must be a positive safe integer")
        assert data.max_retries is not None
        if data.retry > data.max_retries:
            raise RetryInvariantError(
                f"{where}: retry {data.retry} exceeds max_retries {data.max_retries}"
            )
    elif data.mode == "always":
        if data.max_retries is not None:
            raise RetryInvariantError(f"{where}: always mode must not carry max_retries")
    else:
        raise RetryInvariantError(f'{where}: mode must be "normal" or "always"')
    delay = data.delay_ms
    if (
        isinstance(delay, bool)
        or not isinstance(delay, (int, float))
        or not math.isfinite(delay)
        or not 0 <= delay <= _MAX_DELAY_MS
    ):
        raise RetryInvariantError(
            f"{where}: delay_ms must be a finite number in [0, {_MAX_DELAY_MS}]"
        )


class RetryInvariantChecker:
    """Incremental validator of one session's retry records (see the module docstring)."""

    def __init__(self) -> None:
        self._turn: tuple[int, bool] | None = None  # latest turn boundary: (turn, open)
        self._step: tuple[int, int, bool] | None = None  # latest step boundary: (turn, step, open)
        self._provider: str | None = None  # provider of the latest request/header
        self._chains: dict[ChainKey, LlmRetry] = {}
        self._ids: set[str] = set()
        self._scheduled: dict[tuple[str, int], LlmRetry] = {}
        self._started: set[tuple[str, int]] = set()

    @classmethod
    def from_events(cls, events: Iterable[Event]) -> RetryInvariantChecker:
        """A checker that has validated `events` (late installation over an existing history)."""
        checker = cls()
        for event in events:
            checker.check(event)
        return checker

    def provider_for(self, turn: int, step: int) -> str | None:
        """The provider a record at (`turn`, `step`) must name, or None ("no provider")."""
        if self._step is None or self._step != (turn, step, True):
            return None
        return self._provider

    def check(self, event: Event) -> None:
        """Fold one event; raise `RetryInvariantError` if it is a retry record that breaks a rule."""
        data = event.data
        if isinstance(data, TurnStart):
            self._turn = (data.turn, True)
        elif isinstance(data, TurnEnd):
            self._turn = (data.turn, False)
        elif isinstance(data, StepStart):
            self._step = (data.turn, data.step, True)
        elif isinstance(data, StepEnd):
            self._step = (data.turn, data.step, False)
        elif isinstance(data, RequestHeader):
            self._provider = data.header.config.provider
        elif isinstance(data, LlmRetry):
            self._retry(data, f"llm/retry at seq {event.seq}")
        elif isinstance(data, LlmRetryStarted):
            self._started_event(data, f"llm/retry-started at seq {event.seq}")
        elif isinstance(data, LlmFallback):
            step = (data.turn, data.step)
            self._chains = {k: v for k, v in self._chains.items() if (k.turn, k.step) != step}

    def _position(self, turn: int, step: int, where: str) -> None:
        if self._turn != (turn, True):
            raise RetryInvariantError(f"{where}: turn {turn} is not the open turn")
        if self._step != (turn, step, True):
            raise RetryInvariantError(f"{where}: step {turn}/{step} is not the open step")

    def _retry(self, data: LlmRetry, where: str) -> None:
        _validate_record(data, where)
        self._position(data.turn, data.step, where)
        provider = self.provider_for(data.turn, data.step)
        if provider is None:
            raise RetryInvariantError(f"{where}: no provider (no request/header in the log)")
        if data.provider != provider:
            raise RetryInvariantError(
                f"{where}: provider {data.provider!r} differs from the request header's "
                f"provider {provider!r}"
            )
        key = ChainKey(data.turn, data.step, data.provider, data.policy_key)
        previous = self._chains.get(key)
        expected = 1 if previous is None else previous.retry + 1
        if data.retry != expected:
            raise RetryInvariantError(
                f"{where}: retry {data.retry} must equal provider policy retry {expected}"
            )
        if previous is not None and data.retry_id != previous.retry_id:
            raise RetryInvariantError(
                f"{where}: a continuing chain must keep retry_id {previous.retry_id!r}"
            )
        if previous is None and data.retry_id in self._ids:
            raise RetryInvariantError(
                f"{where}: a new chain must not reuse retry_id {data.retry_id!r}"
            )
        self._chains[key] = data
        self._ids.add(data.retry_id)
        self._scheduled[(data.retry_id, data.retry)] = data

    def _started_event(self, data: LlmRetryStarted, where: str) -> None:
        if not _text(data.retry_id):
            raise RetryInvariantError(f"{where}: retry_id must be a non-empty string")
        pair = (data.retry_id, data.retry)
        scheduled = self._scheduled.get(pair)
        if scheduled is None:
            raise RetryInvariantError(
                f"{where}: no llm/retry {data.retry_id!r} retry {data.retry} precedes it"
            )
        if (scheduled.turn, scheduled.step) != (data.turn, data.step):
            raise RetryInvariantError(
                f"{where}: turn/step {data.turn}/{data.step} differs from its llm/retry "
                f"({scheduled.turn}/{scheduled.step})"
            )
        if pair in self._started:
            raise RetryInvariantError(
                f"{where}: retry {data.retry} of {data.retry_id!r} already started"
            )
        self._started.add(pair)
        self._ids.add(data.retry_id)
