"""Fixtures of the runtime tests (the helpers live in `runtime_helpers.py`)."""

from __future__ import annotations

import pytest

from modelwire.runtime import LlmRuntime


@pytest.fixture
def rt() -> LlmRuntime:
    """A fresh runtime with nothing registered."""
    return LlmRuntime()
