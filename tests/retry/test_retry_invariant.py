"""Spec C22–C25 and G.10 `invariant.spec`: the retry invariant checker over hand-built logs."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from modelwire.retry import RetryInvariantChecker, RetryInvariantError, validate_failure
from modelwire.session import (
    EpochHeader,
    Event,
    LlmRetry,
    LlmRetryStarted,
    RequestHeader,
    StepEnd,
    StepStart,
    TurnCompleted,
    TurnEnd,
    TurnStart,
)
from modelwire.session.events import event_type_of
from modelwire.vocab import CallConfig, LlmFailure

KEY = '["normal",2,["SERVER"],500,10000,0]'
FAILURE = LlmFailure("down", "SERVER", status=503)


def header(provider: str = "p") -> RequestHeader:
    return RequestHeader(EpochHeader(config=CallConfig(provider=provider, model="m")), "initial")


def retry(**changes: Any) -> LlmRetry:
    base = LlmRetry(
        retry_id="a",
        turn=1,
        step=1,
        provider="p",
        policy_key=KEY,
        mode="normal",
        failure=FAILURE,
        retry=1,
        max_retries=2,
        delay_ms=500,
    )
    return msgspec.structs.replace(base, **changes)


def started(**changes: Any) -> LlmRetryStarted:
    base = LlmRetryStarted(retry_id="a", turn=1, step=1, retry=1)
    return msgspec.structs.replace(base, **changes)


def events(*datas: msgspec.Struct) -> list[Event]:
    return [Event(i, event_type_of(d), 0, d) for i, d in enumerate(datas)]


OPEN = (TurnStart(1), StepStart(1, 1), header())


def check(*datas: msgspec.Struct) -> RetryInvariantChecker:
    return RetryInvariantChecker.from_events(events(*datas))


def rejects(match: str, *datas: msgspec.Struct) -> None:
    with pytest.raises(RetryInvariantError, match=match) as info:
        check(*datas)
    assert info.value.code == "INVARIANT"


def test_g10_01_provider_lookup_needs_the_open_step_and_a_header() -> None:
    assert check(TurnStart(1), StepStart(1, 1)).provider_for(1, 1) is None
    assert check(TurnStart(1), header(), StepStart(1, 1), StepEnd(1, 1)).provider_for(1, 1) is None
    assert check(*OPEN).provider_for(1, 1) == "p"
    assert check(*OPEN).provider_for(1, 2) is None


def test_g10_02_successive_normal_records_and_an_always_record_are_accepted() -> None:
    always = retry(retry_id="b", mode="always", max_retries=None, policy_key='["always",1,4,0.1]')
    check(*OPEN, retry(), retry(retry=2, delay_ms=0), always)


_BAD_FAILURES: list[tuple[object, str]] = [
    (None, "LlmFailure object"),
    (LlmFailure(5, "X"), "failure.message"),  # type: ignore[arg-type]
    (LlmFailure("", "X"), "failure.message"),
    (LlmFailure("m", 5), "failure.code"),  # type: ignore[arg-type]
    (LlmFailure("m", ""), "failure.code"),
    (LlmFailure("m", "X", status=429.5), "failure.status"),  # type: ignore[arg-type]
    (LlmFailure("m", "X", status=99), "failure.status"),
    (LlmFailure("m", "X", status=600), "failure.status"),
    (LlmFailure("m", "X", provider_retry_after_ms="1"), "provider_retry_after_ms"),  # type: ignore[arg-type]
    (LlmFailure("m", "X", provider_retry_after_ms=0), "provider_retry_after_ms"),
    (LlmFailure("m", "X", request_id=7), "failure.request_id"),  # type: ignore[arg-type]
    (LlmFailure("m", "X", request_id=""), "failure.request_id"),
]


def test_g10_03_failure_payloads_are_validated_field_by_field() -> None:
    validate_failure(
        LlmFailure("m", "X", status=429, provider_retry_after_ms=1.5, request_id="r"), "here"
    )
    assert len(_BAD_FAILURES) == 12
    for failure, field in _BAD_FAILURES:
        with pytest.raises(RetryInvariantError, match=field):
            validate_failure(failure, "here")
        rejects(field, *OPEN, retry(failure=failure))


@pytest.mark.parametrize(
    ("changes", "match"),
    [
        ({"retry_id": ""}, "retry_id"),
        ({"retry": 0}, "retry must be"),
        ({"retry": 1.5}, "retry must be"),
        ({"max_retries": 0}, "max_retries"),
        ({"max_retries": 1.5}, "max_retries"),
        ({"retry": 3}, "exceeds max_retries"),
        ({"mode": "always"}, "must not carry max_retries"),
        ({"mode": "sometimes"}, "mode must be"),
        ({"provider": ""}, "provider must be"),
        ({"policy_key": ""}, "policy_key"),
        ({"delay_ms": -1}, "delay_ms"),
        ({"delay_ms": 2_147_483_648}, "delay_ms"),
        ({"delay_ms": "5"}, "delay_ms"),
    ],
    ids=[
        "empty-id",
        "retry-0",
        "retry-1.5",
        "max-0",
        "max-1.5",
        "retry-over-max",
        "always-with-max",
        "unknown-mode",
        "empty-provider",
        "empty-key",
        "negative-delay",
        "over-max-delay",
        "string-delay",
    ],
)
def test_g10_04_invalid_record_data_is_rejected(changes: dict[str, object], match: str) -> None:
    rejects(match, *OPEN, retry(**changes))


@pytest.mark.parametrize(
    ("prefix", "match"),
    [
        ((), "not the open turn"),
        ((TurnStart(2), StepStart(2, 1), header()), "not the open turn"),
        ((TurnStart(1), StepStart(1, 1), header(), StepEnd(1, 1)), "not the open step"),
        ((TurnStart(1), header()), "not the open step"),
        ((TurnStart(1), StepStart(1, 2), header()), "not the open step"),
        ((*OPEN, StepEnd(1, 1), TurnEnd(1, TurnCompleted())), "not the open turn"),
    ],
    ids=["no-turn", "wrong-turn", "closed-step", "no-step", "wrong-step", "closed-turn"],
)
def test_g10_05_records_outside_an_open_turn_and_step_are_rejected(
    prefix: tuple[msgspec.Struct, ...], match: str
) -> None:
    rejects(match, *prefix, retry())


def test_g10_06_numbering_follows_the_chain_of_the_same_policy_key() -> None:
    check(*OPEN, retry(), retry(retry=2))
    rejects(
        "must equal provider policy retry 1",
        *OPEN,
        retry(),
        retry(retry=2, retry_id="b", policy_key='["normal",3,["SERVER"],500,10000,0]'),
    )


def test_g10_07_repeats_are_rejected_and_a_new_step_restarts_at_one() -> None:
    rejects("must equal provider policy retry 2", *OPEN, retry(), retry())
    check(*OPEN, retry(), StepEnd(1, 1), StepStart(1, 2), retry(step=2, retry_id="b"))


def test_g10_08_a_chain_keeps_its_id_and_new_chains_get_new_ids() -> None:
    rejects("keep retry_id", *OPEN, retry(), retry(retry=2, retry_id="b"))
    rejects(
        "must not reuse retry_id",
        *OPEN,
        retry(),
        StepEnd(1, 1),
        StepStart(1, 2),
        retry(step=2),
    )


@pytest.mark.parametrize(
    ("tail", "match"),
    [
        ((retry(), started(retry_id="")), "retry_id must be"),
        ((started(),), "precedes it"),
        ((retry(), started(retry=2)), "precedes it"),
        ((retry(), started(step=2)), "differs from its llm/retry"),
        ((retry(), started(), started()), "already started"),
    ],
    ids=["empty-id", "unpaired", "other-retry", "other-step", "repeated"],
)
def test_g10_09_retry_started_must_pair_once_with_its_record(
    tail: tuple[msgspec.Struct, ...], match: str
) -> None:
    rejects(match, *OPEN, *tail)


def test_g10_10_incomplete_earlier_boundaries_still_validate_a_later_chain() -> None:
    check(TurnStart(1), StepStart(1, 1), TurnStart(2), StepStart(2, 1), header(), retry(turn=2))


def test_g10_11_a_provider_other_than_the_headers_is_rejected() -> None:
    rejects("differs from the request header", *OPEN, retry(provider="q"))


def test_g10_12_late_installation_validates_the_existing_history() -> None:
    rejects("not the open turn", retry(), TurnStart(1))


def test_g10_13_late_installation_accepts_a_scheduled_and_started_pair() -> None:
    checker = check(*OPEN, retry(), started())
    checker.check(Event(5, "llm/retry", 0, retry(retry=2)))
    checker.check(Event(6, "llm/retry-started", 0, started(retry=2)))
