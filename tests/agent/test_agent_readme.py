"""Every Python block of the README runs, as written, as a plain script against a loopback server,
and fails loudly without a key (issue 30).

The server speaks DeepSeek's wire (the README's route is the built-in `deepseek` one, pointed at
the server with `DEEPSEEK_BASE_URL`) and answers by what a request asks for: JSON mode or the
final-answer tool get a city, an `add` tool a call, a tool result the sum, anything else a
greeting. Each block runs in its own process with a fresh home (user config and data dirs, the
CLI tests' `cli_env`) as its working directory. Without a key every block exits non-zero naming
`DEEPSEEK_API_KEY`; the first block and the agent block give the same output when run twice in
the same home (no history piles up on a permanent log).
"""

from __future__ import annotations

import asyncio
import json
import re
import sys
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from test_agent_deepseek_scenarios import LoopbackServer, server, sse

if str(Path(__file__).resolve().parents[1] / "cli") not in sys.path:  # the CLI tests' helpers
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "cli"))

from cli_helpers import cli_env

__all__ = ["server"]

ROOT = Path(__file__).resolve().parents[2]
API_KEY = "sk-readme-0123456789"
CITY = {"name": "Tokyo", "country": "Japan", "population": 14000000}
USAGE = {"choices": [], "usage": {"prompt_tokens": 20, "completion_tokens": 5, "total_tokens": 25}}

EXPECTED = [
    ("rt.stream(ask)", "Hello!\n"),
    ("@mw.tool", "completed 2 + 40 = 42.\n"),
    ("output_type=City", "City(name='Tokyo', country='Japan', population=14000000)\n"),
    ("stream_turn", "Hello!\n25 tokens, $0.00000"),
    ("async def show()", "0 turn/start\n"),
    ("RetryPlugin()", "Hello!\n"),
    ("TokenMeter.project", "TokenUsage(input_tokens=20, output_tokens=5"),
    ("mcp_servers=[math]", "2 + 40 = 42.\n"),
    ("needs_approval=True", 'asks add {"a": 2, "b": 40}\n2 + 40 = 42.\n'),
]
"""(a line of the block, what its stdout must contain): every block must match exactly one."""


def _blocks() -> list[str]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    return re.findall(r"^```python\n(.*?)^```", text, re.DOTALL | re.MULTILINE)


def _delta(finish: str | None = None, **fields: object) -> dict[str, object]:
    return {"choices": [{"index": 0, "delta": fields, "finish_reason": finish}]}


def _answer(body: dict[str, Any]) -> list[dict[str, object]]:
    tools = [tool["function"]["name"] for tool in body.get("tools") or []]
    last = body["messages"][-1]
    if last["role"] == "tool":
        return [_delta(role="assistant", content="2 + 40 = 42."), _delta("stop"), USAGE]
    if body.get("response_format") is not None:  # structured output (DeepSeek's JSON mode)
        return [_delta(role="assistant", content=json.dumps(CITY)), _delta("stop"), USAGE]
    adds = (("add", {"a": 2, "b": 40}), ("math_add", {"a": 2, "b": 40}))  # math_add: MCP
    for name, arguments in (("final_result", CITY), *adds):
        if name in tools:
            call = {
                "index": 0,
                "id": f"call-{name}",
                "type": "function",
                "function": {"name": name, "arguments": json.dumps(arguments)},
            }
            return [_delta(role="assistant", tool_calls=[call]), _delta("tool_calls"), USAGE]
    return [_delta(role="assistant", content="Hello!"), _delta("stop"), USAGE]


async def _readme_answer(request: web.Request) -> web.StreamResponse:
    assert request.headers.get("Authorization") == f"Bearer {API_KEY}"
    return await sse(*_answer(json.loads(await request.read())))(request)


def test_readme_python_blocks_all_have_an_expectation() -> None:
    blocks = _blocks()
    assert len(blocks) == len(EXPECTED)
    for block in blocks:
        assert [marker for marker, _ in EXPECTED if marker in block] != [], block
    assert not [b for b in blocks if "await " in b.split("async def", 1)[0]], "top-level await"


async def _run(block: str, home: Path, env: dict[str, str]) -> tuple[int, str, str]:
    script = home / "example.py"
    script.write_text(block, encoding="utf-8")
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        str(script),
        cwd=home,
        env=cli_env(home, env),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(proc.communicate(), 120)
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode()


def _block(marker: str) -> str:
    (block,) = [b for b in _blocks() if marker in b]
    return block


@pytest.mark.parametrize("index", range(len(EXPECTED)), ids=[m for m, _ in EXPECTED])
async def test_readme_python_block_runs_as_a_script(
    index: int, server: LoopbackServer, tmp_path: Path
) -> None:
    server.handlers += [_readme_answer] * 20  # each answers by what its request asks for
    marker, expected = EXPECTED[index]
    block = _block(marker)
    env = {"DEEPSEEK_API_KEY": API_KEY, "DEEPSEEK_BASE_URL": server.url}
    code, out, err = await _run(block, tmp_path, env)
    assert code == 0, err
    assert expected in out, (out, err)
    assert err == "", err  # no warning, no unclosed session, no traceback
    if "from_model" in block and "log=" not in block:  # the default log in the user data dir
        assert (tmp_path / "data" / "modelwire" / "sessions.db").is_file()
    if marker in ("rt.stream(ask)", "@mw.tool"):  # run again in the same home: the same output
        assert await _run(block, tmp_path, env) == (0, out, "")


@pytest.mark.parametrize("index", range(len(EXPECTED)), ids=[m for m, _ in EXPECTED])
async def test_readme_python_block_without_a_key_fails_naming_the_variable(
    index: int, tmp_path: Path
) -> None:
    code, out, err = await _run(_block(EXPECTED[index][0]), tmp_path, {})
    assert code != 0, out
    assert "DEEPSEEK_API_KEY" in err.strip().splitlines()[-1], err  # the last line says why
