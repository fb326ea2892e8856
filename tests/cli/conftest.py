"""Fixtures for the CLI tests."""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_helpers import RunCli, make_runner


@pytest.fixture
def run_cli(tmp_path: Path) -> RunCli:
    """Run `python -m modelwire.cli` in a clean environment rooted at `tmp_path`."""
    return make_runner(tmp_path)
