"""Exhaustiveness the type checker sees: `modelwire.never.assert_never` takes `Never`, so a
`match` over the chunk union that misses a variant fails `mypy --strict` (R-NEV-1)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ALL = [
    "BlockStart",
    "TextDelta",
    "ReasoningDelta",
    "ToolCallDelta",
    "BlockEnd",
    "UsageChunk",
    "Finish",
]


def _program(handled: list[str]) -> str:
    cases = "\n".join(f"        case {name}():\n            return {name!r}" for name in handled)
    return f"""
from modelwire.never import assert_never
from modelwire.vocab import {", ".join(ALL)}, StreamChunk


def kind(chunk: StreamChunk) -> str:
    match chunk:
{cases}
        case _:
            assert_never(chunk, "test")
"""


def _mypy(tmp_path: Path, source: str) -> subprocess.CompletedProcess[str]:
    path = tmp_path / "probe.py"
    path.write_text(source)
    return subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental", str(path)],
        capture_output=True,
        text=True,
        check=False,
        cwd=tmp_path,
    )


@pytest.mark.slow
def test_a_match_missing_chunk_variants_fails_the_type_check(tmp_path: Path) -> None:
    missing = _mypy(tmp_path, _program(["TextDelta", "Finish"]))
    assert missing.returncode != 0, missing.stdout
    assert "assert_never" in missing.stdout
    complete = _mypy(tmp_path, _program(ALL))
    assert complete.returncode == 0, complete.stdout
