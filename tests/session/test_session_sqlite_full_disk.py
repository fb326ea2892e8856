"""Opening an existing SQLite log on a full disk names the real cause (the disk is full) and the
path, instead of SQLite's follow-up "cannot rollback - no transaction is active".

The disk is a real 2 MiB tmpfs mounted for the test (root is needed; CI runs as root and must not
skip this test)."""

from __future__ import annotations

import contextlib
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from modelwire.errors import ErrorCode, HarnessError
from modelwire.session import TurnStart, open_log


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    mount = tmp_path / "disk"
    mount.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(mount)],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        if os.environ.get("CI"):
            pytest.fail(f"cannot mount a tmpfs for the full-disk test: {done.stderr.strip()}")
        pytest.skip(f"cannot mount a tmpfs here (needs root): {done.stderr.strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def _fill(disk: Path) -> None:
    with (disk / "filler").open("wb", buffering=0) as fh, contextlib.suppress(OSError):
        while True:
            fh.write(b"\0" * 65536)
    with (disk / "filler2").open("wb", buffering=0) as fh, contextlib.suppress(OSError):
        while True:
            fh.write(b"\0" * 512)


async def test_opening_an_existing_sqlite_log_on_a_full_disk_reports_disk_full(
    small_disk: Path,
) -> None:
    path = small_disk / "sessions.db"
    log = await open_log(f"sqlite:///{path}")
    await log.append("s", TurnStart(1), barrier=True)
    await log.close()
    _fill(small_disk)
    with pytest.raises(HarnessError) as info:
        reopened = await open_log(f"sqlite:///{path}")
        try:
            await reopened.append("s", TurnStart(2), barrier=True)
        finally:
            with contextlib.suppress(HarnessError):
                await reopened.close()
    assert info.value.code == ErrorCode.LOG_UNAVAILABLE
    assert "disk" in info.value.message and "full" in info.value.message
    assert str(path) in info.value.message
    assert "cannot rollback" not in info.value.message
    (small_disk / "filler").unlink()
    (small_disk / "filler2").unlink()
    log = await open_log(f"sqlite:///{path}")  # room again: the durable prefix is intact
    try:
        assert [e.data for e in await log.read("s")] == [TurnStart(1)]
    finally:
        await log.close()
