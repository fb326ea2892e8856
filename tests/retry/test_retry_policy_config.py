"""G.18 (retry-policy resolver) through the place a policy belongs: each provider configuration.

The policy the retry plugin executes is the one the serving registration captured (spec S7.7).
"""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from modelwire.adapters.deepseek import DeepSeekAdapter
from modelwire.errors import LlmError
from modelwire.policy import AlwaysRetryPolicy, NormalRetryPolicy
from modelwire.runtime import LlmRuntime
from modelwire.vocab import CallConfig

KEY = "sk-policy-test-0123456789"


def adapter(retry_policy: Any = None) -> DeepSeekAdapter:
    return DeepSeekAdapter(api_key=KEY, env={}, retry_policy=retry_policy)


async def served_policy(retry_policy: Any) -> object:
    runtime = LlmRuntime()
    runtime.register_adapter(["ds"], adapter(retry_policy))
    return (
        await runtime.prepare_call(CallConfig(provider="ds", model="deepseek-v4-flash"))
    ).retry_policy


async def test_g18_01_an_omitted_policy_is_the_frozen_normal_default() -> None:
    policy = await served_policy(None)
    assert policy == NormalRetryPolicy(
        max_retries=2,  # the seeds decide 2 (DESIGN §7), not upstream's 5
        retryable_codes=("EMPTY_RESPONSE", "RATE_LIMIT", "SERVER", "TIMEOUT", "TRANSPORT"),
        initial_delay_ms=500,
        max_delay_ms=10000,
        jitter_ratio=0.1,
    )
    assert isinstance(policy, NormalRetryPolicy)
    assert isinstance(policy.retryable_codes, tuple)
    with pytest.raises(AttributeError):
        policy.max_retries = 9  # type: ignore[misc]


async def test_g18_02_a_configured_normal_policy_is_detached_from_its_input() -> None:
    codes = ["SERVER", "RATE_LIMIT"]
    config = {
        "mode": "normal",
        "max_retries": 4,
        "retryable_codes": codes,
        "backoff": {"initial_delay_ms": 10, "max_delay_ms": 40, "jitter_ratio": 0.25},
    }
    policy = await served_policy(config)
    codes.append("AUTH")
    config["max_retries"] = 9
    assert policy == NormalRetryPolicy(
        max_retries=4,
        retryable_codes=("SERVER", "RATE_LIMIT"),
        initial_delay_ms=10,
        max_delay_ms=40,
        jitter_ratio=0.25,
    )


async def test_g18_03_always_mode_resolves_with_the_default_backoff_only() -> None:
    policy = await served_policy({"mode": "always"})
    assert policy == AlwaysRetryPolicy(initial_delay_ms=500, max_delay_ms=10000, jitter_ratio=0.1)
    assert set(msgspec.structs.asdict(policy)) == {
        "initial_delay_ms",
        "max_delay_ms",
        "jitter_ratio",
    }  # type: ignore[arg-type]


async def test_g18_04_stale_normal_fields_are_ignored_in_always_mode() -> None:
    policy = await served_policy(
        {
            "mode": "always",
            "max_retries": 3,
            "retryable_codes": ["SERVER"],
            "backoff": {"initial_delay_ms": 5, "max_delay_ms": 20},
        }
    )
    assert policy == AlwaysRetryPolicy(initial_delay_ms=5, max_delay_ms=20)


_INVALID: list[tuple[dict[str, Any], str]] = [
    ({"max_retries": -1}, "max_retries must be a non-negative safe integer"),
    ({"max_retries": 1.5}, "max_retries must be a non-negative safe integer"),
    ({"max_retries": 2**53}, "max_retries must be a non-negative safe integer"),
    ({"max_retries": True}, "max_retries must be a non-negative safe integer"),
    ({"backoff": {"initial_delay_ms": 0}}, "backoff.initial_delay_ms"),
    ({"backoff": {"initial_delay_ms": 2**31, "max_delay_ms": 2**31}}, "backoff.initial_delay_ms"),
    ({"backoff": {"initial_delay_ms": -10}}, "backoff.initial_delay_ms"),
    ({"backoff": {"max_delay_ms": float("inf")}}, "backoff.max_delay_ms"),
    ({"backoff": {"max_delay_ms": 2**31}}, "backoff.max_delay_ms"),
    ({"backoff": {"max_delay_ms": False}}, "backoff.max_delay_ms"),
    ({"backoff": {"initial_delay_ms": 20, "max_delay_ms": 10}}, "must be less than or equal to"),
    ({"backoff": {"jitter_ratio": 1.1}}, "backoff.jitter_ratio"),
    ({"backoff": {"jitter_ratio": -0.1}}, "backoff.jitter_ratio"),
    ({"retryable_codes": []}, "retryable_codes must not be empty"),
    ({"retryable_codes": ["SERVER", "SERVER"]}, "must not contain duplicates"),
    ({"retryable_codes": [""]}, "must contain only non-empty strings"),
    ({"retryable_codes": [429]}, "must contain only non-empty strings"),
    ({"retryable_codes": ["server-ish"]}, "unknown code"),
    ({"max_retrys": 2}, 'unknown key "max_retrys"'),
    ({"backoff": {"initial": 5}}, 'unknown key "initial"'),
    ({"mode": "sometimes"}, 'mode must be "normal" or "always"'),
]


@pytest.mark.parametrize(("changes", "match"), _INVALID, ids=[m for _, m in _INVALID])
def test_g18_05_invalid_policies_are_refused_at_configuration_time(
    changes: dict[str, Any], match: str
) -> None:
    config: dict[str, Any] = {"mode": "normal", **changes}
    with pytest.raises(LlmError, match=match) as info:
        adapter(config)
    assert info.value.code == "INVALID_CONFIG"
    assert str(info.value).startswith("DeepSeek adapter: retry_policy")
