"""The durable path's steps (issue 21): `Agent.run_turn` on each log beside the floors.

Run by `suite.py` after its own steps, on the same server. Every harness row here carries
`--tag` (its step, for `report_durable.py`); single streams are paired with both floors.

- `agent-2k`   the 2,000-chunk text and tool streams of the main table (rows of `suite.py`);
- `agent-20k`  one 20,000-chunk stream, text and tool call, for the agent clients, the DeepSeek
               adapter and pydantic-ai's `Agent` (text only, the peer row);
- `agent-c100` 100 concurrent turns over 100 sessions (one process, one log);
- `agent-c16`  16 concurrent turns: chunk events appended per second (PostgreSQL target), the
               median of 5 runs;
- `scale`      `bench_scale.py`: 10,000 concurrent small streams, RSS per stream.
"""

from __future__ import annotations

import functools
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import streams

HERE = Path(__file__).resolve().parent
AGENTS = ("mw-agent-memory", "mw-agent-sqlite", "mw-agent-postgres")
BIG = ("mw-deepseek", *AGENTS, "pydantic-ai-agent")
CONCURRENT = ("hard-floor-chat", "mw-deepseek", *AGENTS)
SCALE = ("asyncio-floor", "hard-floor-chat", "floor-chat", "mw-deepseek", "mw-agent-memory")


def _flags(**kw: object) -> list[str]:
    out: list[str] = []
    for key, val in kw.items():
        flag = "--" + key.replace("_", "-")
        if val is True:
            out.append(flag)
        elif val is not False and val is not None:
            out += [flag, str(val)]
    return out


def run_durable_steps(run: Any, sz: Any, clients: list[str]) -> None:
    """The steps above, for the clients of this run (floors always paired)."""
    say = functools.partial(print, file=sys.stderr, flush=True)
    big_tb = streams.default_tool_bytes(sz.agent_n)
    say(f"== the durable path: one stream of {sz.agent_n:,} chunks (text; tool call)")
    for c in (c for c in clients if c in BIG):
        for tb in (0, big_tb):
            if tb and c.startswith("pydantic"):
                continue  # an Agent would run the tool and call the model again
            run.harness(
                c,
                *_flags(n=sz.agent_n, tb=tb, repeat=sz.agent_repeat, warmup=1, pair_floor=True),
                *_flags(tag="agent-20k"),
                timeout=600,
            )
    for width, tag in ((sz.agent_conc, "agent-c100"), (16, "agent-c16")):
        say(f"== the durable path: {width} concurrent turns over {width} sessions")
        for c in (c for c in clients if c in CONCURRENT):
            if tag == "agent-c16" and c not in AGENTS:
                continue
            run.harness(
                c,
                # the PostgreSQL target's run is short (~0.3 s): the median of 5, as the issue asks
                *_flags(
                    mode="concurrent",
                    concurrency=width,
                    n=sz.agent_conc_n,
                    repeat=5 if tag == "agent-c16" else 1,
                ),
                *_flags(warmup=1, tag=tag),
                timeout=600,
            )
    say(f"== scale: {sz.scale_streams:,} concurrent streams of 20 chunks, RSS per stream")
    run.rows.append(
        scale(run, sz.scale_streams, [c for c in SCALE if c in clients or c == "asyncio-floor"])
    )  # the floor: always


def scale(run: Any, streams_n: int, names: list[str]) -> dict[str, Any]:
    """Run `bench_scale.py` on the suite's server; its figures as one row (tag `scale`)."""
    out = run.out / "scale.json"
    cmd = [*run.pin_client, run.py, str(HERE / "bench_scale.py"), "--port", str(run.port)]
    cmd += ["--streams", str(streams_n), "--client", ",".join(names), "--json", str(out)]
    row: dict[str, Any] = {"client": "scale", "args": ["--tag", "scale"], "available": True}
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    except subprocess.TimeoutExpired:
        row.update(ok=False, error="timed out after 900 s")
    else:
        row["lines"] = p.stdout.splitlines()
        row["ok"] = p.returncode == 0
        if out.exists():
            row["scale"] = json.loads(out.read_text())
        if p.returncode != 0:
            row["error"] = (p.stderr.strip().splitlines() or p.stdout.splitlines() or ["?"])[-1]
    if not row.get("ok"):
        run.failures.append(f"bench_scale.py: {row.get('error')}")
    with open(run.out / "harness.jsonl", "a") as f:
        f.write(json.dumps(row) + "\n")
    for line in row.get("lines", []):
        print(f"  {line}", file=sys.stderr, flush=True)
    return row
