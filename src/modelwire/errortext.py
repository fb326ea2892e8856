"""Classifiers of provider error text: context-window overflow and exhausted quota.

Used by the status mapping and the translators to pick a stable code from a provider's own words
(never to build a code from them). Re-exported from `modelwire.errors`.
"""

from __future__ import annotations

import re
from typing import Final

__all__ = ["is_context_window_exceeded_error", "is_quota_exceeded_error"]

_FLAGS: Final = re.IGNORECASE | re.ASCII
_CONTEXT_PATTERNS: Final = tuple(
    re.compile(p, _FLAGS)
    for p in (
        r"(?:^|[^a-z0-9])context[\s_-](?:length|window)[\s_-](?:exceed(?:ed|s)?|overflow(?:ed)?|limit[\s_-]exceeded)(?:$|[^a-z0-9])",
        r"\b(?:maximum|max)(?:\s+(?:allowed|supported))?\s+context\s+(?:length|window)\b",
        r"\b(?:request|prompt|input|messages?)\s+(?:is\s+|are\s+)?too\s+(?:large|long)\s+for\s+(?:(?:this|the)\s+)?(?:model(?:'s)?\s+)?context(?:\s+window)?\b",
        r"\b(?:input|prompt|request)\s+(?:is\s+)?too\s+(?:long|large)\s+for\s+(?:this|the)\s+model\b",
        r"\bprompt\s+is\s+too\s+long\b",  # Anthropic: "prompt is too long: N tokens > M maximum"
        r"\b(?:input|prompt|request|messages?)\b.{0,40}\b(?:exceed(?:s|ed)?|overflows?|is\s+larger\s+than)\b.{0,40}\b(?:the\s+)?(?:model(?:'s)?\s+)?context(?:\s+(?:length|window))?\b",
    )
)
_QUOTA_PATTERNS: Final = tuple(
    re.compile(p, _FLAGS)
    for p in (
        r"\binsufficient[\s_-]+(?:quota|balance|credits?)\b",
        r"\b(?:quota|usage[\s_-]+limit)[\s_-]+(?:exceeded|exhausted|reached)\b",
        r"\bexceed(?:ed|s)?[\s_-]+(?:(?:your|the)[\s_-]+)?(?:current[\s_-]+)?quota\b",
        r"\b(?:balance|credits?)[\s_-]+(?:exhausted|depleted)\b",
        r"\bout[\s_-]+of[\s_-]+(?:credits?|budget)\b",
    )
)


def is_context_window_exceeded_error(detail: str) -> bool:
    """True when provider error text says the request exceeded the model's context window."""
    return any(p.search(detail) for p in _CONTEXT_PATTERNS)


def is_quota_exceeded_error(detail: str) -> bool:
    """True when provider error text says quota, balance or credits are exhausted (not a rate limit)."""
    return any(p.search(detail) for p in _QUOTA_PATTERNS)
