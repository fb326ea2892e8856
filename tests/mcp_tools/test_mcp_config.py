"""Declaring MCP servers: `[mcp.NAME]` sections, the checks of every option, environment
references for secrets, reprs that hide them, and `import modelwire.mcp` staying light."""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from mcp_helpers import children

from modelwire.cli.config import CliConfig
from modelwire.errors import HarnessError
from modelwire.mcp import MCPServer, servers_from_config
from modelwire.mcp._secrets import scrub


def _refused(sections: dict[str, object]) -> HarnessError:
    with pytest.raises(HarnessError) as caught:
        servers_from_config(sections)
    return caught.value


def test_sections_become_stdio_and_http_servers_named_by_their_section() -> None:
    servers = servers_from_config(
        {
            "files": {"command": "npx", "args": ["-y", "pkg"], "env": {"T": "${T}"}},
            "gh": {"url": "https://example.com/mcp/", "headers": {"A": "x"}, "timeout_ms": 5000},
            "old": {"url": "https://example.com/sse", "transport": "sse", "idempotent": ["read"]},
        }
    )
    assert [s.name for s in servers.values()] == ["files", "gh", "old"]
    assert servers["files"].target == "stdio: npx -y pkg"
    assert servers["gh"].target == "http: https://example.com/mcp/"
    assert servers["old"].target == "sse: https://example.com/sse"
    assert (servers["gh"].timeout_ms, servers["gh"].call_timeout_ms) == (5000.0, 5000.0)


@pytest.mark.parametrize(
    ("section", "needle"),
    [
        ({"command": "x", "bogus": 1}, "mcp.s.bogus: unknown key"),
        ({"command": 3}, "mcp.s.command: Expected `str | null`, got `int`"),
        ({"command": "x", "url": "http://h/mcp"}, "mcp.s: give either command"),
        ({}, "mcp.s: give either command"),
        ({"url": "ftp://h"}, "must be an http:// or https:// URL"),
        ({"url": "http://user:pw@h/mcp"}, "must not carry credentials"),
        ({"url": "http://h/mcp", "args": ["a"]}, "args, env and cwd are for command servers"),
        ({"command": "x", "headers": {"A": "b"}}, "headers and transport are for url servers"),
        ({"command": "x", "timeout_ms": 0}, "timeout_ms must be a positive number"),
        ({"command": "x", "idempotent": "read"}, "Expected `bool | array`"),
    ],
)
def test_a_bad_section_is_invalid_config_naming_the_key(
    section: dict[str, object], needle: str
) -> None:
    error = _refused({"s": section})
    assert error.code == "INVALID_CONFIG" and needle in error.message, error.message


def test_needs_approval_in_a_section_marks_the_tools() -> None:
    servers = servers_from_config(
        {"s": {"command": "x", "needs_approval": ["write"]}, "h": {"url": "http://h/mcp"}}
    )
    assert servers["s"]._needs_approval == frozenset({"write"})
    assert servers["h"]._needs_approval is False
    error = _refused({"s": {"command": "x", "needs_approval": "write"}})
    assert error.code == "INVALID_CONFIG" and "mcp.s.needs_approval" in error.message


def test_bad_arguments_to_the_constructors_name_the_field() -> None:
    for build, needle in (
        (lambda: MCPServer.stdio("python", "server.py"), "args must be a list of strings"),
        (lambda: MCPServer.stdio(""), "command must be a non-empty string"),
        (lambda: MCPServer.stdio("x", env={"A": 1}), "env 'A' must be a string"),  # type: ignore[dict-item]
        (lambda: MCPServer.http("http://h/mcp", headers={"A": "x\r\ny"}), "headers 'A'"),
        (lambda: MCPServer.stdio("x", name="a.b"), "name must be 1-40 characters"),
        (lambda: MCPServer.stdio("x", call_timeout_ms=-1), "call_timeout_ms must be"),
    ):
        with pytest.raises(HarnessError) as caught:
            build()
        assert caught.value.code == "INVALID_CONFIG" and needle in caught.value.message


async def test_an_unset_environment_reference_fails_before_anything_starts(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("MCP_TEST_UNSET", raising=False)
    before = children()
    server = MCPServer.stdio(sys.executable, ["-c", "pass"], env={"TOKEN": "${MCP_TEST_UNSET}"})
    with pytest.raises(HarnessError) as caught:
        await server.open()
    assert caught.value.code == "MISSING_CREDENTIAL"
    assert "env 'TOKEN' refers to ${MCP_TEST_UNSET}, which is not set" in caught.value.message
    assert children() == before  # nothing was spawned


def test_reprs_show_names_never_secret_values() -> None:
    stdio = MCPServer.stdio("npx", env={"GITHUB_TOKEN": "ghp_literal_secret"})
    http = MCPServer.http("https://h/mcp", headers={"Authorization": "Bearer literal_secret"})
    assert "ghp_literal_secret" not in repr(stdio) and "<1 variables>" in repr(stdio)
    assert "literal_secret" not in repr(http) and "'Authorization': '***'" in repr(http)
    config = CliConfig(mcp={"gh": {"url": "u", "headers": {"A": "hdr_secret"}, "env": {"B": "s"}}})
    assert "hdr_secret" not in repr(config) and "<1 variables>" in repr(config)


def test_scrub_masks_every_secret_value() -> None:
    assert scrub("Bearer abcd1234 failed: abcd1234", ["abcd1234", "xy"]) == (
        "Bearer *** failed: ***"
    )


def _probe(code: str) -> str:
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    return out.stdout.strip()


def test_declaring_servers_does_not_import_the_sdk() -> None:
    probe = (
        "import sys, modelwire, modelwire.agent\n"
        "from modelwire.mcp import MCPServer, servers_from_config\n"
        "MCPServer.stdio('x'); servers_from_config({'a': {'url': 'http://h/mcp'}})\n"
        "print(sorted(m for m in ('mcp', 'mcp_types', 'anyio', 'httpx2', 'pydantic')"
        " if m in sys.modules))"
    )
    assert _probe(probe) == "[]"


def test_without_the_sdk_opening_a_server_says_how_to_install_it() -> None:
    probe = (
        "import asyncio, sys\n"
        "class Block:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name.split('.')[0] in ('mcp', 'mcp_types'):\n"
        "            raise ModuleNotFoundError('blocked', name=name)\n"
        "sys.meta_path.insert(0, Block())\n"
        "from modelwire.mcp import MCPServer\n"
        "try:\n"
        "    asyncio.run(MCPServer.stdio('x', name='files').open())\n"
        "except Exception as exc:\n"
        "    print(exc.code, exc.message)\n"
    )
    out = _probe(probe)
    assert out.startswith("MCP MCP server 'files': MCP needs the official `mcp` SDK")
    assert "pip install 'modelwire[mcp]'" in out


def test_the_readme_mcp_section_is_a_valid_config() -> None:
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    (block,) = [b for b in re.findall(r"```toml\n(.*?)```", readme, re.S) if "[mcp." in b]
    (server,) = servers_from_config(tomllib.loads(block)["mcp"]).values()
    assert (server.name, server.target) == ("github", "http: https://api.githubcopilot.com/mcp/")
    assert "${GITHUB_TOKEN}" not in repr(server)
