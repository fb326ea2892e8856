"""Counters the reliability suite fills while it runs; `conftest.py` prints them at the end."""

from __future__ import annotations

from collections import Counter
from typing import Final

__all__ = ["COUNTS", "FACTS", "assert_no_secret", "bump", "fact"]

COUNTS: Final[Counter[str]] = Counter()
"""scenario runs, fuzz examples, kill trials, concurrent turns, scanned texts …"""


FACTS: Final[set[str]] = set()
"""Counters that state a fact of the suite (set at import, the same in every xdist worker)."""


def bump(name: str, n: int = 1) -> None:
    """Add `n` to counter `name`."""
    COUNTS[name] += n


def fact(name: str, n: int) -> None:
    """Set counter `name` to `n`: a fact of the suite, not a tally (`FACTS`)."""
    FACTS.add(name)
    COUNTS[name] = n


def assert_no_secret(text: str, where: str) -> None:
    """Fail if any credential of the suite (or its Authorization header value) is in `text`."""
    from reliability_wire import SECRETS

    COUNTS["secret scans"] += 1
    for secret in SECRETS:
        assert secret not in text, f"a secret API key leaked into {where}"
        assert f"Bearer {secret}" not in text, f"an Authorization header leaked into {where}"
