"""Request retry inside the same Step: `RetryPlugin`, whose retry count lives in the session log.

`RetryPlugin` executes the retry policy of the route that served a failed attempt (normal or
always mode); `find_previous_retry` is the log-derived count; `RetryInvariantChecker` validates
the `llm/retry` / `llm/retry-started` records of a session (a test-time companion).
"""

from __future__ import annotations

from .counting import ChainKey, find_previous_retry, last_matching_retry, read_retry_chain
from .invariant import RetryInvariantChecker, RetryInvariantError, validate_failure
from .plugin import PLUGIN_NAME, RetryPlugin, provider_delay_ms

__all__ = [
    "PLUGIN_NAME",
    "ChainKey",
    "RetryInvariantChecker",
    "RetryInvariantError",
    "RetryPlugin",
    "find_previous_retry",
    "last_matching_retry",
    "provider_delay_ms",
    "read_retry_chain",
    "validate_failure",
]
