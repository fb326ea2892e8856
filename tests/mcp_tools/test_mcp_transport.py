"""MCP over HTTP goes through the library's one transport (DESIGN §9): a real forward proxy
(tinyproxy) set on the server, or named by the environment's HTTP_PROXY, carries every request of
the MCP session; `NO_PROXY` keeps it direct; a proxy's password is never shown; `[mcp.NAME]`
takes a route's transport settings (a bad one names its key), and a command server refuses them.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from mcp_helpers import LoopbackServer, agent_for, by_request
from tinyproxy import TinyProxy, free_port

from modelwire.errors import HarnessError
from modelwire.mcp import MCPServer
from modelwire.mcp.config import servers_from_config
from modelwire.session import MemoryLog
from modelwire.wire.settings import TransportSettings

pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest.fixture(scope="module")
def proxy() -> Iterator[TinyProxy]:
    with TinyProxy() as running:
        yield running


@pytest.fixture
def no_proxy_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY"):
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.lower(), raising=False)


def _proxied(proxy: TinyProxy, port: int) -> int:
    """How many requests for the MCP server's port the proxy logged."""
    return proxy.log().count(f"127.0.0.1:{port}/mcp")


async def test_an_mcp_server_with_a_proxy_setting_is_reached_through_the_proxy(
    model: LoopbackServer, http_url: str, proxy: TinyProxy, no_proxy_env: None
) -> None:
    port = int(http_url.rsplit(":", 1)[1].split("/", 1)[0])
    before = _proxied(proxy, port)
    server = MCPServer.http(http_url, name="web", transport=TransportSettings(proxy=proxy.bare_url))
    model.handlers += [by_request([("web_add", {"a": 2, "b": 3})])] * 2
    async with agent_for(model, MemoryLog(), [server]) as agent:
        result = await agent.run_turn("s", "2 + 3")
    assert result.text == "done: 5"
    # the handshake, the initialized notification, tools/list and tools/call at least
    assert _proxied(proxy, port) - before >= 4, proxy.log()[-2000:]


async def test_the_environment_proxy_carries_mcp_and_no_proxy_keeps_it_direct(
    model: LoopbackServer,
    http_url: str,
    proxy: TinyProxy,
    no_proxy_env: None,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    port = int(http_url.rsplit(":", 1)[1].split("/", 1)[0])
    monkeypatch.setenv("HTTP_PROXY", proxy.bare_url)
    before = _proxied(proxy, port)
    server = MCPServer.http(http_url, name="web")
    model.handlers += [by_request([("web_add", {"a": 1, "b": 1})])] * 2
    async with agent_for(model, MemoryLog(), [server]) as agent:
        assert (await agent.run_turn("s", "1 + 1")).text == "done: 2"
    through = _proxied(proxy, port)
    assert through > before
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    model.handlers += [by_request([("web_add", {"a": 1, "b": 2})])] * 2
    async with agent_for(model, MemoryLog(), [MCPServer.http(http_url, name="web")]) as agent:
        assert (await agent.run_turn("s", "1 + 2")).text == "done: 3"
    assert _proxied(proxy, port) == through  # direct: the proxy saw none of it


async def test_an_unreachable_proxy_is_an_mcp_failure_without_its_password(
    no_proxy_env: None, http_url: str
) -> None:
    dead = f"http://alice:pr0xy-pw-31337@127.0.0.1:{free_port()}"
    server = MCPServer.http(http_url, name="web", transport=TransportSettings(proxy=dead))
    with pytest.raises(HarnessError) as caught:
        await server.open()
    error = caught.value
    assert error.code == "MCP"
    assert "MCP server 'web'" in error.message and "could not be reached" in error.message
    assert "proxy" in error.message.lower()
    assert "pr0xy-pw-31337" not in repr(error) and error.__cause__ is None


async def test_an_mcp_section_takes_transport_settings_and_names_a_bad_one() -> None:
    servers = servers_from_config(
        {"web": {"url": "http://127.0.0.1:9/mcp", "proxy": "none", "connect_timeout_ms": 500}}
    )
    assert isinstance(servers["web"], MCPServer)
    with pytest.raises(HarnessError) as caught:
        servers_from_config({"web": {"url": "http://127.0.0.1:9/mcp", "proxy": "ftp://x"}})
    assert caught.value.code == "INVALID_CONFIG"
    assert caught.value.message.startswith("mcp.web.proxy ")
    with pytest.raises(HarnessError) as caught:
        servers_from_config({"files": {"command": "true", "proxy": "http://127.0.0.1:3128"}})
    assert caught.value.code == "INVALID_CONFIG"
    assert "for url servers, not command ones" in caught.value.message


async def test_a_transport_that_is_not_transport_settings_is_refused() -> None:
    with pytest.raises(HarnessError) as caught:
        MCPServer.http("http://127.0.0.1:9/mcp", transport={"proxy": "none"})  # type: ignore[arg-type]
    assert caught.value.code == "INVALID_CONFIG"
    assert "MCPServer.http transport must be a TransportSettings" in caught.value.message
