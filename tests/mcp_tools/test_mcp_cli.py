"""`modelwire mcp list` and `modelwire chat --mcp NAME`, run as the real command against the test
MCP server (stdio) and the loopback model."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from mcp_helpers import API_KEY, SERVER, LoopbackServer, by_request

if str(Path(__file__).resolve().parents[1] / "cli") not in sys.path:  # the CLI tests' helpers
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "cli"))

from cli_helpers import assert_one_line_error, run_cli_async, write_config

pytestmark = pytest.mark.asyncio(loop_scope="module")

GOOD = f'[mcp.t]\ncommand = "{sys.executable}"\nargs = ["{SERVER}"]\n'
GONE = '[mcp.gone]\ncommand = "/nonexistent/mcp-server"\n'


async def test_mcp_list_prints_each_server_and_its_tools_and_a_line_for_a_failure(
    tmp_path: Path,
) -> None:
    config = write_config(tmp_path / "c.toml", "http://127.0.0.1:9", GOOD + GONE)
    result = await run_cli_async(tmp_path, ["mcp", "list", "--config", config])
    assert result.code == 1, result.err
    lines = result.out.splitlines()
    assert lines[0].startswith(f"t  stdio: {sys.executable} {SERVER}  ")
    assert "  t_add" in result.out and "Add two integers." in result.out
    assert "left out: tool 'broken' is left out: its input schema" in result.out
    (gone,) = [line for line in lines if line.startswith("gone")]
    assert gone.endswith(
        "failed: MCP server 'gone' (stdio: /nonexistent/mcp-server) could not start: command "
        "'/nonexistent/mcp-server' not found [MCP]"
    )
    assert "Traceback" not in result.err


async def test_mcp_list_json(tmp_path: Path) -> None:
    config = write_config(tmp_path / "c.toml", "http://127.0.0.1:9", GONE)
    result = await run_cli_async(tmp_path, ["mcp", "list", "--json", "--config", config])
    assert result.code == 1
    (row,) = json.loads(result.out)
    assert (row["name"], row["tools"], row["error"]["code"]) == ("gone", [], "MCP")


async def test_chat_with_mcp_offers_the_servers_tools(
    tmp_path: Path, model: LoopbackServer
) -> None:
    model.handlers += [by_request([("t_add", {"a": 2, "b": 40})])] * 2
    config = write_config(tmp_path / "c.toml", model.url, GOOD + GONE)
    result = await run_cli_async(
        tmp_path,
        ["chat", "--config", config, "--mcp", "t", "What is 2 + 40?"],
        env={"DEEPSEEK_API_KEY": API_KEY},
    )
    assert result.code == 0, result.err
    assert result.out.strip() == "done: 42"
    assert "← t_add = 42" in result.err
    assert [t["function"]["name"] for t in model.bodies[0]["tools"]][:1] == ["t_add"]


async def test_chat_with_an_unknown_mcp_server_is_a_usage_error(tmp_path: Path) -> None:
    config = write_config(tmp_path / "c.toml", "http://127.0.0.1:9", GOOD)
    result = await run_cli_async(
        tmp_path,
        ["chat", "--config", config, "--mcp", "nope", "hi"],
        env={"DEEPSEEK_API_KEY": API_KEY},
    )
    assert_one_line_error(result, "no MCP server 'nope'", "have: t")


async def test_a_bad_mcp_section_is_a_usage_error_naming_the_key(tmp_path: Path) -> None:
    config = write_config(tmp_path / "c.toml", "http://127.0.0.1:9", "[mcp.t]\ncommand = 3\n")
    result = await run_cli_async(tmp_path, ["mcp", "list", "--config", config])
    assert_one_line_error(result, "mcp.t.command")


async def test_chat_with_a_server_that_cannot_start_fails_naming_it(tmp_path: Path) -> None:
    config = write_config(tmp_path / "c.toml", "http://127.0.0.1:9", GONE)
    result = await run_cli_async(
        tmp_path,
        ["chat", "--config", config, "--mcp", "gone", "hi"],
        env={"DEEPSEEK_API_KEY": API_KEY},
    )
    assert_one_line_error(result, "MCP server 'gone'", "not found", "[MCP]", code=1)
