"""Proxies through a real forward proxy (Debian's tinyproxy, with and without Basic auth), on the
DeepSeek route and a providers route, for the streaming POST, model discovery and the Responses
WebSocket (issue 31): CONNECT + TLS for an https upstream, absolute-form for an http one,
NO_PROXY, the per-route override, a 407 and a dead proxy as `PROXY` naming the proxy without
its password."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Iterator

import pytest
import trustme
from tinyproxy import TinyProxy, free_port
from transport_upstream import Upstream, deepseek, discover, providers, stream_text

from modelwire.errors import LlmError
from modelwire.wire.http import close_sessions

_PASSWORD = "pr0xy-s3cret"
_VARS = ("http_proxy", "https_proxy", "all_proxy", "no_proxy")


@pytest.fixture(autouse=True)
async def _fresh_pool() -> AsyncIterator[None]:
    yield
    await close_sessions()


@pytest.fixture(autouse=True)
def _no_proxy_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in _VARS:
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.upper(), raising=False)


@pytest.fixture(scope="module")
def ca() -> trustme.CA:
    return trustme.CA()


@pytest.fixture(scope="module")
def ca_file(ca: trustme.CA) -> Iterator[str]:
    with ca.cert_pem.tempfile() as path:
        yield path


@pytest.fixture(scope="module")
def proxy() -> Iterator[TinyProxy]:
    with TinyProxy() as running:
        yield running


@pytest.fixture(scope="module")
def auth_proxy() -> Iterator[TinyProxy]:
    with TinyProxy(auth=("alice", _PASSWORD)) as running:
        yield running


async def test_https_upstream_tunnels_through_the_proxy_with_credentials(
    ca: trustme.CA, ca_file: str, auth_proxy: TinyProxy
) -> None:
    """CONNECT + TLS (verified against the route's ca_file) for every request kind (the pool
    is closed after each, so each opens its own tunnel)."""
    before = auth_proxy.log().count("CONNECT localhost")
    async with Upstream(ca, tls=True) as up:
        settings = {"proxy": auth_proxy.url, "ca_file": ca_file}
        assert await stream_text(deepseek(up.url, **settings), "deepseek") == "hello"
        await close_sessions()
        assert await stream_text(providers(up.url, **settings), "p") == "hello"
        await close_sessions()
        assert await discover(providers(up.url, **settings), up.url) == ["m-one", "m-two"]
        await close_sessions()
        await stream_text(providers(up.url, websocket=True, **settings), "p")  # a tool call
    assert auth_proxy.log().count("CONNECT localhost") - before == 4
    assert all("via" not in seen for seen in up.seen)  # tunnelled: the proxy saw no request


async def test_http_upstream_goes_in_absolute_form_from_the_environment(
    proxy: TinyProxy, monkeypatch: pytest.MonkeyPatch
) -> None:
    """HTTP_PROXY (upper case) for http upstreams: absolute-form requests the proxy forwards
    (its Via header reaches the upstream); the WebSocket tunnels."""
    monkeypatch.setenv("HTTP_PROXY", proxy.url)
    async with Upstream() as up:
        assert await stream_text(deepseek(up.url), "deepseek") == "hello"
        assert await stream_text(providers(up.url), "p") == "hello"
        assert await discover(providers(up.url), up.url) == ["m-one", "m-two"]
        await stream_text(providers(up.url, websocket=True), "p")  # a tool call, no text
    forwarded = [seen for seen in up.seen if "tinyproxy" in seen.get("via", "")]
    assert len(forwarded) == 3  # the chat POSTs and the model list
    assert f"GET http://localhost:{up.url.split(':')[2]}" in proxy.log()


async def test_no_proxy_and_the_route_override(
    ca: trustme.CA, ca_file: str, proxy: TinyProxy, monkeypatch: pytest.MonkeyPatch
) -> None:
    dead = f"http://127.0.0.1:{free_port()}"
    monkeypatch.setenv("https_proxy", dead)
    monkeypatch.setenv("http_proxy", dead)
    async with Upstream(ca, tls=True) as up:
        monkeypatch.setenv("NO_PROXY", "example.com, .localhost,localhost:1")
        assert await stream_text(deepseek(up.url, ca_file=ca_file), "deepseek") == "hello"
        monkeypatch.delenv("NO_PROXY")
        # "none": direct whatever the environment says
        assert await stream_text(providers(up.url, proxy="none", ca_file=ca_file), "p") == "hello"
        # a route's own proxy wins over a dead one in the environment
        before = proxy.log().count("CONNECT localhost")
        assert await discover(providers(up.url, proxy=proxy.url, ca_file=ca_file), up.url)
        assert proxy.log().count("CONNECT localhost") == before + 1
        with pytest.raises(LlmError) as info:
            await stream_text(deepseek(up.url, ca_file=ca_file), "deepseek")
    assert info.value.code == "PROXY" and dead in info.value.message


@pytest.mark.parametrize("tls", [True, False], ids=["connect", "absolute-form"])
async def test_407_is_proxy_naming_the_proxy_never_its_password(
    ca: trustme.CA, ca_file: str, auth_proxy: TinyProxy, tls: bool
) -> None:
    wrong = auth_proxy.url.replace(_PASSWORD, "wr0ng-" + _PASSWORD)
    # tinyproxy answers wrong credentials with 401 to a CONNECT (taken as the proxy's), and with
    # a plain 401 to a forwarded request, which no client can tell from the upstream's own
    proxies = (auth_proxy.bare_url, wrong) if tls else (auth_proxy.bare_url,)
    async with Upstream(ca, tls=tls) as up:
        failures = []
        for url in proxies:
            settings = {"proxy": url, "ca_file": ca_file}
            for call in (
                stream_text(deepseek(up.url, **settings), "deepseek"),
                stream_text(providers(up.url, **settings), "p"),
                discover(providers(up.url, **settings), up.url),
            ):
                with pytest.raises(LlmError) as info:
                    await call
                failures.append(info.value)
    assert [f.code for f in failures] == ["PROXY"] * 3 * len(proxies)
    where = auth_proxy.bare_url.split("//")[1]
    assert all(f"{where} asked for credentials (407" in f.message for f in failures[:3])
    assert all(
        f"alice:***@{where} refused its credentials (401)" in f.message for f in failures[3:]
    )
    for failure in failures:
        _assert_no_secret(failure, _PASSWORD)


async def test_a_dead_proxy_is_proxy_for_every_request_kind(ca_file: str) -> None:
    dead = f"http://bob:{_PASSWORD}@127.0.0.1:{free_port()}"
    url = "https://localhost:9/v1"
    failures = []
    for call in (
        stream_text(deepseek(url, proxy=dead, ca_file=ca_file), "deepseek"),
        stream_text(providers(url, proxy=dead), "p"),
        discover(providers(url, proxy=dead), url),
        stream_text(providers(url, websocket=True, proxy=dead), "p"),
    ):
        with pytest.raises(LlmError) as info:
            await call
        failures.append(info.value)
    assert [f.code for f in failures] == ["PROXY"] * 4
    shown = dead.replace(_PASSWORD, "***")
    assert all(f"the proxy {shown} failed: connection refused" in f.message for f in failures)
    for failure in failures:
        _assert_no_secret(failure, _PASSWORD)


def _assert_no_secret(error: BaseException, secret: str) -> None:
    seen: BaseException | None = error
    while seen is not None:
        assert secret not in str(seen) and secret not in repr(seen)
        seen = seen.__cause__ or seen.__context__


def test_the_environment_is_left_as_found() -> None:
    assert not any(os.environ.get(n) for n in _VARS)
