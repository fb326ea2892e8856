"""`modelwire serve keys create | list | revoke` as a user runs them: the key printed once, the
list without it, revocation, and bad arguments as one-line errors."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "modelwire", "serve", "keys", *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_keys_create_list_revoke(tmp_path: Path) -> None:
    log = f"sqlite:///{tmp_path}/gw.db"
    made = _cli(
        "create",
        "--name",
        "ci",
        "--budget-usd",
        "2.5",
        "--rpm",
        "60",
        "--routes",
        "oa,an",
        "--expires",
        "7d",
        "--log",
        log,
    )
    assert made.returncode == 0, made.stderr
    key = made.stdout.strip()
    assert key.startswith("mwk_") and len(key) == 47
    listed = _cli("list", "--json", "--log", log)
    assert listed.returncode == 0, listed.stderr
    (row,) = json.loads(listed.stdout)
    assert row["name"] == "ci" and row["key"] == key[:8] + "…" and row["state"] == "live"
    assert (row["budget_usd"], row["rpm"], row["routes"]) == ("2.5", 60, ["oa", "an"])
    assert key not in listed.stdout
    human = _cli("list", "--log", log)
    assert "ci" in human.stdout and key not in human.stdout
    again = _cli("create", "--name", "ci", "--log", log)
    assert again.returncode == 2 and "exists already" in again.stderr
    assert _cli("revoke", "ci", "--log", log).stdout.strip() == "revoked ci"
    twice = _cli("revoke", "ci", "--log", log)
    assert twice.returncode == 2 and "no live key named 'ci'" in twice.stderr
    assert json.loads(_cli("list", "--json", "--log", log).stdout)[0]["state"] == "revoked"


def test_bad_key_arguments_are_one_line_errors(tmp_path: Path) -> None:
    log = f"sqlite:///{tmp_path}/gw.db"
    money = _cli("create", "--name", "x", "--budget-usd", "lots", "--log", log)
    assert money.returncode == 2 and "not an amount in USD" in money.stderr
    when = _cli("create", "--name", "x", "--expires", "soon", "--log", log)
    assert when.returncode == 2 and "ISO date-time" in when.stderr
