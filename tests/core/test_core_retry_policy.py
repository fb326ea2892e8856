"""Retry policy R-RP-1..5 (spec/core.md §11.8 RP-01..05, 20 expanded), snake_case, default 2."""

from __future__ import annotations

import msgspec
import pytest

from modelwire import (
    AlwaysRetryPolicy,
    HarnessError,
    NormalRetryPolicy,
    backoff_delay_ms,
    policy_key,
    resolve_retry_policy,
)

PATH = "provider.retry_policy"
DEFAULT_CODES = ("EMPTY_RESPONSE", "RATE_LIMIT", "SERVER", "TIMEOUT", "TRANSPORT")


def test_rp_01_omitted_config_gives_the_frozen_default() -> None:
    policy = resolve_retry_policy(None, PATH)
    assert isinstance(policy, NormalRetryPolicy)
    assert policy.mode == "normal"
    assert msgspec.structs.asdict(policy) == {
        "max_retries": 2,
        "retryable_codes": DEFAULT_CODES,
        "initial_delay_ms": 500,
        "max_delay_ms": 10000,
        "jitter_ratio": 0.1,
    }
    assert msgspec.json.decode(msgspec.json.encode(policy))["mode"] == "normal"
    with pytest.raises(AttributeError):
        policy.max_retries = 9  # type: ignore[misc]
    assert isinstance(policy.retryable_codes, tuple)


def test_rp_02_normal_config_resolves_and_is_detached() -> None:
    # Upstream uses the test-only code BUSY; modelwire refuses codes outside its table (issue 5),
    # so a real non-default code proves the same pass-through and detachment.
    codes = ["QUOTA"]
    policy = resolve_retry_policy(
        {
            "mode": "normal",
            "max_retries": 4,
            "retryable_codes": codes,
            "backoff": {"initial_delay_ms": 25, "max_delay_ms": 100, "jitter_ratio": 0},
        },
        PATH,
    )
    assert policy == NormalRetryPolicy(
        max_retries=4,
        retryable_codes=("QUOTA",),
        initial_delay_ms=25,
        max_delay_ms=100,
        jitter_ratio=0,
    )
    codes.append("AUTH")
    assert isinstance(policy, NormalRetryPolicy)
    assert policy.retryable_codes == ("QUOTA",)


def test_rp_flat_backoff_keys_resolve_like_the_nested_form() -> None:
    """DESIGN §2: the backoff fields may be given flat beside `mode`; mixing both forms is refused."""
    flat = resolve_retry_policy(
        {"mode": "normal", "initial_delay_ms": 25, "max_delay_ms": 100, "jitter_ratio": 0}, PATH
    )
    nested = resolve_retry_policy(
        {
            "mode": "normal",
            "backoff": {"initial_delay_ms": 25, "max_delay_ms": 100, "jitter_ratio": 0},
        },
        PATH,
    )
    assert flat == nested
    with pytest.raises(HarnessError, match=f"^{PATH}: give the backoff fields either flat"):
        resolve_retry_policy(
            {"mode": "always", "max_delay_ms": 100, "backoff": {"initial_delay_ms": 1}}, PATH
        )
    with pytest.raises(HarnessError, match=rf"^{PATH}\.initial_delay_ms must be a positive"):
        resolve_retry_policy({"mode": "always", "initial_delay_ms": -1}, PATH)


@pytest.mark.parametrize("code", ["HTTP_429", "CONTENT_FILTER", "INSUFFICIENT_SYSTEM_RESOURCE"])
def test_rp_known_codes_beyond_the_defaults_are_accepted(code: str) -> None:
    policy = resolve_retry_policy({"mode": "normal", "retryable_codes": [code]}, PATH)
    assert isinstance(policy, NormalRetryPolicy) and policy.retryable_codes == (code,)


@pytest.mark.parametrize("code", ["BUSY", "HTTP_99", "HTTP_600", "http_500", "rate_limit"])
def test_rp_unknown_codes_are_refused_naming_the_code(code: str) -> None:
    with pytest.raises(HarnessError, match=f'retryable_codes contains an unknown code "{code}"'):
        resolve_retry_policy({"mode": "normal", "retryable_codes": [code]}, PATH)


def test_rp_03_always_mode_resolves_to_backoff_only() -> None:
    policy = resolve_retry_policy({"mode": "always"}, PATH)
    assert policy == AlwaysRetryPolicy(initial_delay_ms=500, max_delay_ms=10000, jitter_ratio=0.1)
    assert policy.mode == "always"
    assert not hasattr(policy, "max_retries")
    assert not hasattr(policy, "retryable_codes")


def test_rp_04_always_mode_ignores_inactive_keys() -> None:
    policy = resolve_retry_policy(
        {"mode": "always", "max_retries": -1, "retryable_codes": ["SERVER"]}, PATH
    )
    assert policy == AlwaysRetryPolicy()


@pytest.mark.parametrize(
    ("config", "match"),
    [
        pytest.param(
            {"mode": "normal", "max_retries": -1}, "max_retries", id="01-negative-retries"
        ),
        pytest.param(
            {"mode": "normal", "max_retries": 1.5}, "max_retries", id="02-fractional-retries"
        ),
        pytest.param(
            {"mode": "normal", "max_retries": 2**53}, "max_retries", id="03-unsafe-retries"
        ),
        pytest.param(
            {"mode": "always", "backoff": {"initial_delay_ms": 0}},
            "initial_delay_ms",
            id="04-zero-initial",
        ),
        pytest.param(
            {"mode": "normal", "backoff": {"max_delay_ms": float("inf")}},
            "max_delay_ms",
            id="05-infinite-max",
        ),
        pytest.param(
            {"mode": "normal", "backoff": {"initial_delay_ms": 2147483648}},
            "initial_delay_ms",
            id="06-initial-over-timer-bound",
        ),
        pytest.param(
            {"mode": "always", "backoff": {"max_delay_ms": 2147483648}},
            "max_delay_ms",
            id="07-max-over-timer-bound",
        ),
        pytest.param(
            {"mode": "normal", "backoff": {"initial_delay_ms": 20, "max_delay_ms": 10}},
            "less than or equal",
            id="08-initial-above-max",
        ),
        pytest.param(
            {"mode": "always", "backoff": {"jitter_ratio": 1.1}},
            "jitter_ratio",
            id="09-jitter-above-one",
        ),
        pytest.param(
            {"mode": "normal", "retryable_codes": []}, "must not be empty", id="10-no-codes"
        ),
        pytest.param(
            {"mode": "normal", "retryable_codes": ["SERVER", "SERVER"]},
            "duplicates",
            id="11-duplicate",
        ),
        pytest.param(
            {"mode": "normal", "retryable_codes": [""]}, "non-empty strings", id="12-empty-code"
        ),
        pytest.param(
            {"mode": "normal", "retryable_codes": [429]}, "non-empty strings", id="13-number-code"
        ),
        pytest.param(
            {"mode": "normal", "maxRetries": 3}, 'unknown key "maxRetries"', id="14-camel-case-key"
        ),
        pytest.param(
            {"mode": "always", "backoff": {"initial_delay": 1}},
            'unknown key "initial_delay"',
            id="15-unknown-backoff-key",
        ),
        pytest.param({"mode": "sometimes"}, 'mode must be "normal" or "always"', id="16-bad-mode"),
    ],
)
def test_rp_05_invalid_config_raises(config: dict[str, object], match: str) -> None:
    with pytest.raises(HarnessError, match=match) as info:
        resolve_retry_policy(config, PATH)
    assert info.value.code == "INVALID_CONFIG"
    assert info.value.message.startswith(PATH)


def test_rp_05_checks_run_in_spec_order() -> None:
    # mode before keys; keys before counts; counts and codes before backoff.
    with pytest.raises(HarnessError, match="mode"):
        resolve_retry_policy({"bogus": 1}, PATH)
    with pytest.raises(HarnessError, match='unknown key "bogus"'):
        resolve_retry_policy({"mode": "normal", "bogus": 1, "max_retries": -1}, PATH)
    with pytest.raises(HarnessError, match="max_retries"):
        resolve_retry_policy(
            {"mode": "normal", "max_retries": -1, "backoff": {"jitter_ratio": 5}}, PATH
        )
    with pytest.raises(HarnessError, match="retryable_codes"):
        resolve_retry_policy(
            {"mode": "normal", "retryable_codes": [], "backoff": {"jitter_ratio": 5}}, PATH
        )


@pytest.mark.parametrize("jitter", [0, 1, 0.5], ids=["zero", "one", "half"])
def test_rp_05_jitter_bounds_are_inclusive(jitter: float) -> None:
    policy = resolve_retry_policy({"mode": "always", "backoff": {"jitter_ratio": jitter}}, PATH)
    assert policy.jitter_ratio == jitter


@pytest.mark.parametrize("value", [True, "5", None], ids=["bool", "string", "none-means-default"])
def test_rp_05_non_numeric_delays(value: object) -> None:
    config = {"mode": "normal", "backoff": {"initial_delay_ms": value}}
    if value is None:
        assert resolve_retry_policy(config, PATH).initial_delay_ms == 500
    else:
        with pytest.raises(HarnessError, match="initial_delay_ms"):
            resolve_retry_policy(config, PATH)


def test_rp_06_backoff_and_policy_key() -> None:
    policy = resolve_retry_policy(None, PATH)
    assert backoff_delay_ms(policy, 1, sample=lambda: 0.5) == 500
    assert backoff_delay_ms(policy, 2, sample=lambda: 0.0) == pytest.approx(900)
    assert backoff_delay_ms(policy, 3, sample=lambda: 1.0) == pytest.approx(2200)
    assert backoff_delay_ms(policy, 10_000, sample=lambda: 1.0) == 10_000
    assert policy_key(policy) == (
        '["normal",2,["EMPTY_RESPONSE","RATE_LIMIT","SERVER","TIMEOUT","TRANSPORT"],500,10000,0.1]'
    )
    assert policy_key(AlwaysRetryPolicy()) == '["always",500,10000,0.1]'
