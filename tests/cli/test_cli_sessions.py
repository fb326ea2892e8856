"""`modelwire sessions list | show | rm` on sessions made by the real `chat` command."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_helpers import RunCli, assert_one_line_error, make_runner, run_cli_async, write_config
from pgschema import PG_ENV, PG_URL, create_schema_url, drop_schema

from modelwire.cli.demo_script import ScriptedReply, ScriptedStep, WireUsage
from modelwire.cli.demo_server import DemoServer

KEY = {"DEEPSEEK_API_KEY": "sk-test"}
STEP = ScriptedStep(reply=ScriptedReply(("why",), ("Short", " answer."), WireUsage(7, 3, 0, 1)))
BIG = "x" * 100_000


@pytest.fixture(scope="module")
def logged(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """A log with three chat sessions (one of them has a 100 KB prompt): (home, log path)."""
    import asyncio

    home = tmp_path_factory.mktemp("sessions")
    db = str(home / "chat.db")

    async def make() -> None:
        async with DemoServer((STEP,) * 3, api_key="sk-test") as server:
            config = write_config(home / "c.toml", server.base_url)
            base = ["--config", config, "--log", db]
            for sid, prompt, stdin in (
                ("alpha", "Tell me about invoices", ""),
                ("beta", "Summarize this", f"{BIG}\nend of file\n"),
                ("gamma", "Plan a\ntrip   to Rome", ""),
            ):
                argv = ["chat", prompt, "--session", sid, "--new", *base]
                result = await run_cli_async(home, argv, KEY, input=stdin)
                assert result.code == 0, result.err

    asyncio.run(make())
    return home, db


def test_list_is_a_table_with_a_header_newest_first(logged: tuple[Path, str]) -> None:
    home, db = logged
    result = make_runner(home)("sessions", "list", "--log", db)
    assert result.code == 0, result.err
    header, *rows = result.out.splitlines()
    assert header.split() == ["ID", "MODEL", "STARTED", "TURNS", "TOKENS", "COST", "PREVIEW"]
    assert [row.split()[0] for row in rows] == ["gamma", "beta", "alpha"]
    gamma = rows[0]
    assert "deepseek/deepseek-v4-flash" in gamma and gamma.endswith("Plan a trip to Rome")
    assert gamma.split()[4:6] == ["1", "10"]  # one turn, 7 + 3 tokens
    assert gamma.split()[6] == "$0.00000182"  # deepseek-v4-flash: 7×0.14 + 3×0.28 = 1.82 per 1M
    columns = {header.index(name) for name in ("MODEL", "PREVIEW")}
    for row in rows:  # ids never push the other columns out of line
        assert all(row[c - 1] == " " for c in columns)
    assert len(rows[1]) < 300  # the 100 KB prompt is folded to one short line


def test_list_limit_search_and_json(logged: tuple[Path, str]) -> None:
    home, db = logged
    run = make_runner(home)
    limited = run("sessions", "list", "--log", db, "--limit", "1")
    assert [line.split()[0] for line in limited.out.splitlines()[1:]] == ["gamma", "1"]
    assert "1 of 3 sessions" in limited.out
    found = run("sessions", "list", "--log", db, "--search", "INVOICE")
    assert [line.split()[0] for line in found.out.splitlines()[1:]] == ["alpha"]
    nothing = run("sessions", "list", "--log", db, "--search", "zebra")
    assert nothing.code == 0 and nothing.out.startswith("no sessions matching 'zebra'")
    listed = json.loads(run("sessions", "list", "--log", db, "--json").out)
    assert [s["session_id"] for s in listed] == ["gamma", "beta", "alpha"]
    assert listed[0]["model"] == "deepseek-v4-flash" and listed[0]["turns"] == 1
    assert listed[0]["tokens"] == 10 and listed[0]["cost"] == "0.00000182"
    assert listed[0]["preview"] == "Plan a trip to Rome"


def test_show_is_a_transcript_that_folds_long_messages(logged: tuple[Path, str]) -> None:
    home, db = logged
    run = make_runner(home)
    shown = run("sessions", "show", "beta", "--log", db)
    assert shown.code == 0, shown.err
    assert shown.out.startswith("session beta · deepseek/deepseek-v4-flash")
    assert "you: Summarize this" in shown.out
    assert "more characters (--full shows them)" in shown.out
    assert len(shown.out) < 5_000
    assert max(len(line) for line in shown.out.splitlines()) <= 200  # wrapped, not one line
    assert "assistant (deepseek-v4-flash): Short answer." in shown.out
    assert "reasoning: why" in shown.out
    assert shown.out.rstrip().endswith("turn 1 completed")
    full = run("sessions", "show", "beta", "--log", db, "--full")
    assert full.out.count("x") >= 100_000 and "end of file" in full.out
    events = run("sessions", "show", "beta", "--log", db, "--events")
    assert "user/message" in events.out and len(events.out) < 5_000


def test_rm_deletes_sessions_after_confirmation(run_cli: RunCli, tmp_path: Path) -> None:
    db = str(tmp_path / "d.db")
    for _ in range(2):
        assert run_cli("demo", "--delay-ms", "0", "--log", db).code == 0
    ids = [
        s["session_id"] for s in json.loads(run_cli("sessions", "list", "--log", db, "--json").out)
    ]
    refused = run_cli("sessions", "rm", ids[0], "--log", db)
    assert_one_line_error(refused, "--yes")
    assert_one_line_error(run_cli("sessions", "rm", "nobody", "--yes", "--log", db), "'nobody'")
    removed = run_cli("sessions", "rm", ids[0], "--yes", "--log", db)
    assert removed.code == 0, removed.err
    left = json.loads(run_cli("sessions", "list", "--log", db, "--json").out)
    assert [s["session_id"] for s in left] == ids[1:]
    assert_one_line_error(run_cli("sessions", "show", ids[0], "--log", db), ids[0])
    memory = run_cli("sessions", "rm", "x", "--yes", "--log", "memory:")
    assert_one_line_error(memory, "no session 'x' in memory:")


@pytest.mark.skipif(PG_URL is None, reason=f"{PG_ENV} is not set")
async def test_rm_deletes_sessions_from_postgresql(run_cli: RunCli) -> None:
    """Issue 30: `sessions rm` works on a PostgreSQL log (`SessionLog.delete`)."""
    assert PG_URL is not None
    name, url = await create_schema_url(PG_URL)
    try:
        for _ in range(2):
            assert run_cli("demo", "--delay-ms", "0", "--log", url).code == 0
        listed = json.loads(run_cli("sessions", "list", "--log", url, "--json").out)
        ids = [s["session_id"] for s in listed]
        removed = run_cli("sessions", "rm", ids[0], "--yes", "--log", url)
        assert removed.code == 0, removed.err
        assert "deleted 1 session(s)" in removed.err and "postgresql://" in removed.err
        left = json.loads(run_cli("sessions", "list", "--log", url, "--json").out)
        assert [s["session_id"] for s in left] == ids[1:]
        gone = run_cli("sessions", "rm", ids[0], "--yes", "--log", url)
        assert_one_line_error(gone, f"no session {ids[0]!r}")
    finally:
        await drop_schema(PG_URL, name)
