"""`modelwire batch submit|status|results` as real processes against the loopback OpenAI batch
upstream (`batch_upstream`, from the OpenAI "Files" and "Batch" references), one SQLite log
shared by the three commands; a bad request line is refused before anything is sent."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path

from batch_upstream import BatchUpstream

SRC = Path(__file__).resolve().parents[2] / "src"


async def _run(home: Path, *args: str) -> tuple[int, str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MODELWIRE_", "OPENAI_"))}
    env.update(
        HOME=str(home),
        XDG_DATA_HOME=str(home / "data"),
        XDG_CONFIG_HOME=str(home / "config"),
        OPENAI_API_KEY="sk-batch-cli-1",
        NO_COLOR="1",
        PYTHONPATH=f"{SRC}{os.pathsep}{os.environ.get('PYTHONPATH', '')}",
    )
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "modelwire",
        *args,
        env=env,
        cwd=home,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(proc.communicate(), 120)
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode()


async def test_submit_status_results_over_one_log(tmp_path: Path) -> None:
    requests = tmp_path / "requests.jsonl"
    requests.write_text(
        '{"prompt": "first"}\n\n'
        '{"messages": [{"role": "user", "content": "second"}], "max_tokens": 50}\n',
        encoding="utf-8",
    )
    async with BatchUpstream() as up:
        config = tmp_path / "c.toml"
        config.write_text(f'[providers.openai]\nbase_url = "{up.url}/v1"\n', encoding="utf-8")
        common = ["--config", str(config), "--log", f"sqlite:///{tmp_path / 'jobs.db'}"]
        code, out, err = await _run(
            tmp_path, "batch", "submit", "-m", "openai:gpt-4.1", str(requests), *common
        )
        assert code == 0, err
        job = out.strip()
        assert job.startswith("batch-")
        code, out, err = await _run(tmp_path, "batch", "status", job, *common)
        assert code == 0, err
        assert json.loads(out)["status"] == "ended"
        code, out, err = await _run(tmp_path, "batch", "results", job, "--wait", *common)
        assert code == 0, err
        rows = [json.loads(line) for line in out.splitlines()]
    assert [r["text"] for r in rows] == ["echo: first", "echo: second"]
    assert rows[0]["usage"] == {"input_tokens": 10, "output_tokens": 2}
    assert rows[0]["cost"] == "0.000018" and rows[0]["error"] is None
    assert up.creates == 1
    sent = [json.loads(x) for x in next(iter(up.files.values()))["content"].splitlines()]
    assert sent[1]["body"]["max_completion_tokens"] == 50


async def test_a_bad_line_is_refused_before_anything_is_sent(tmp_path: Path) -> None:
    requests = tmp_path / "bad.jsonl"
    requests.write_text('{"prompt": "ok"}\n{"prompt": ""}\n', encoding="utf-8")
    async with BatchUpstream() as up:
        config = tmp_path / "c.toml"
        config.write_text(f'[providers.openai]\nbase_url = "{up.url}/v1"\n', encoding="utf-8")
        code, _, err = await _run(
            tmp_path,
            "batch",
            "submit",
            "-m",
            "openai:gpt-4.1",
            str(requests),
            "--config",
            str(config),
            "--log",
            "memory:",
        )
    assert code == 2 and "line 2" in err and "Traceback" not in err
    assert up.uploads == 0 and up.creates == 0
