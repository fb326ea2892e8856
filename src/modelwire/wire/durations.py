"""Unit-suffixed durations as providers write them: OpenAI's rate-limit resets (``6m0s``,
``20ms``) and protobuf Durations in Google's error details (``37s``, ``34.4s``)."""

from __future__ import annotations

import math
import re
from typing import Final

__all__ = ["duration_s"]

_PART: Final = re.compile(r"(\d+(?:\.\d+)?)(ms|us|µs|ns|h|m|s)")
_UNIT_S: Final = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 1e-3, "us": 1e-6, "µs": 1e-6, "ns": 1e-9}


def duration_s(text: str) -> float | None:
    """The seconds `text` (surrounding blanks ignored) spells as number+unit parts, else None."""
    text = text.strip()
    parts = _PART.findall(text)
    if not parts or "".join(n + u for n, u in parts) != text:
        return None
    total = sum(float(n) * _UNIT_S[u] for n, u in parts)
    return total if math.isfinite(total) else None
