"""Request retry inside the same Step: `RetryPlugin`, whose retry count lives in the session log.

`RetryPlugin` executes the retry policy of the route that served a failed attempt (normal or
always mode); `find_previous_retry` is the log-derived count; `RetryInvariantChecker` validates
the `llm/retry` / `llm/retry-started` records of a session (a test-time companion).
`FallbackPlugin` moves a step whose route failed for good to the next route/model of its chain
(`llm/fallback`, the position in the chain derived from the log too).
"""

from __future__ import annotations

from .counting import ChainKey, find_previous_retry, last_matching_retry, read_retry_chain
from .fallback import DEFAULT_FALLBACK_CODES, FallbackPlugin, FallbackTarget
from .invariant import RetryInvariantChecker, RetryInvariantError, validate_failure
from .plugin import PLUGIN_NAME, RetryPlugin, provider_delay_ms

__all__ = [
    "DEFAULT_FALLBACK_CODES",
    "PLUGIN_NAME",
    "ChainKey",
    "FallbackPlugin",
    "FallbackTarget",
    "RetryInvariantChecker",
    "RetryInvariantError",
    "RetryPlugin",
    "find_previous_retry",
    "last_matching_retry",
    "provider_delay_ms",
    "read_retry_chain",
    "validate_failure",
]
