"""Smoke run of the side-by-side benchmarks: the floor and modelwire clients on tiny streams.

`benchmarks/run --quick --no-peers` starts the local SSE server, streams every protocol through
the bare aiohttp floor and every modelwire client that has landed, and checks that each client
reassembled exactly what the server sent (text, reasoning, tool arguments, usage, finish). A
client that loses or reorders a chunk makes the run exit non-zero. No timing is asserted here.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
RUN = ROOT / "benchmarks" / "run"


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory: pytest.TempPathFactory) -> subprocess.CompletedProcess[str]:
    if not RUN.exists():
        pytest.skip("benchmarks/run is missing")
    out = tmp_path_factory.mktemp("bench")
    env = {**os.environ, "BENCH_PYTHON": sys.executable}
    return subprocess.run(
        ["bash", str(RUN), "--quick", "--no-peers", "--out", str(out)],
        capture_output=True,
        text=True,
        env=env,
        timeout=900,  # a hang guard only: a loaded CI machine runs the quick suite slowly
        cwd=str(ROOT),
    )


def test_bench_quick_run_passes_every_correctness_check(
    quick_run: subprocess.CompletedProcess[str],
) -> None:
    assert quick_run.returncode == 0, quick_run.stderr[-4000:]
    assert "FAILED" not in quick_run.stdout


@pytest.mark.parametrize("proto", ["chat", "responses", "anthropic"])
@pytest.mark.parametrize(
    "floor", ["floor: aiohttp + json.loads", "hard floor: asyncio + chunked by hand + msgspec"]
)
def test_bench_floor_reassembles_each_protocol(
    quick_run: subprocess.CompletedProcess[str], proto: str, floor: str
) -> None:
    row = next(ln for ln in quick_run.stdout.splitlines() if f"{floor} ({proto})" in ln)
    assert "not available" not in row and "FAILED" not in row


def test_bench_durable_path_section_reports_every_target_against_the_hard_floor(
    quick_run: subprocess.CompletedProcess[str],
) -> None:
    out = quick_run.stdout
    assert "## The durable path" in out
    for target in ("agent + SQLite ≤ 2×", "agent + memory ≤ 1.5×", "agent + PostgreSQL ≤ 3×"):
        row = next(ln for ln in out.splitlines() if ln.startswith(f"| {target}"))
        assert "FAILED" not in row
    assert "16 concurrent turns" in out and "checkpoint flush" in out


@pytest.mark.parametrize(
    "client",
    [
        "mw-deepseek",
        "mw-deepseek-stream",
        "mw-providers-chat",
        "mw-providers-responses",
        "mw-providers-anthropic",
        "mw-agent-memory",
        "mw-agent-sqlite",
        "mw-agent-postgres",
    ],
)
def test_bench_modelwire_client_ran_or_is_reported_unavailable(
    quick_run: subprocess.CompletedProcess[str], client: str
) -> None:
    # Each modelwire client appears in the ratio table; it either ran (figures) or says why not.
    row = next(ln for ln in quick_run.stdout.splitlines() if ln.startswith(f"| {client} |"))
    assert "FAILED" not in row
    assert "not available" in row or "·" in row


def test_bench_quick_run_leaves_results_md_alone(
    quick_run: subprocess.CompletedProcess[str],
) -> None:
    assert "--quick smoke run" in quick_run.stdout


def _harness() -> Any:
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import harness  # the benchmark harness, not a package of the project

    return harness


def _exact_result(exp: dict[str, Any]) -> Any:
    from clients.common import Result

    calls = [dict(c) for c in exp["tool_calls"]]
    return Result(exp["text"], exp["reasoning"], calls, dict(exp["usage"]), exp["finish"])


class _Mw:
    name = "probe"
    proto = "chat"
    checks_usage = True


def _drop_text_piece(r: Any, p: Any) -> None:
    r.text = "".join(p.text[:10] + p.text[11:])


def _swap_text_pieces(r: Any, p: Any) -> None:
    t = list(p.text)
    t[3], t[4] = t[4], t[3]
    r.text = "".join(t)


def _drop_reasoning_piece(r: Any, p: Any) -> None:
    r.reasoning = "".join(p.reasoning[1:])


def _drop_argument_piece(r: Any, p: Any) -> None:
    r.tool_calls[0]["arguments"] = "".join(p.args[:-1])


def _wrong_tool_id(r: Any, p: Any) -> None:
    r.tool_calls[0]["id"] = "call_other"


def _lost_usage(r: Any, p: Any) -> None:
    r.usage = None


def _wrong_finish(r: Any, p: Any) -> None:
    r.finish = "stop"


@pytest.mark.parametrize(
    "tamper",
    [
        _drop_text_piece,
        _swap_text_pieces,
        _drop_reasoning_piece,
        _drop_argument_piece,
        _wrong_tool_id,
        _lost_usage,
        _wrong_finish,
    ],
)
def test_bench_check_rejects_a_lost_or_reordered_chunk(tamper: Any) -> None:
    h = _harness()
    import streams

    p = streams.plan(200, streams.default_tool_bytes(200))
    exp = streams.expected(p)
    h.check(_Mw(), _exact_result(exp), exp)  # the exact reassembly passes
    res = _exact_result(exp)
    tamper(res, p)
    with pytest.raises(AssertionError, match="probe"):
        h.check(_Mw(), res, exp)
