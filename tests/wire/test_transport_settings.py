"""The transport settings at load (issue 31): every bad value is `INVALID_CONFIG` naming its field
on `[providers.X]`, `[deepseek]` and the DeepSeek adapter's arguments; the proxy password never
shows in a repr; and which proxy a request takes, as curl and httpx decide it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import trustme

from modelwire.adapters.deepseek import DeepSeekAdapter
from modelwire.adapters.providers.config import resolve_profiles
from modelwire.errors import HarnessError, LlmError
from modelwire.wire import TransportSettings
from modelwire.wire.proxy import ProxyError, no_proxy_matches, proxy_for, proxy_secrets


@pytest.fixture(scope="module")
def pems(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    ca = trustme.CA()
    one, other = ca.issue_cert("one.test"), ca.issue_cert("other.test")
    folder = tmp_path_factory.mktemp("pems")
    files = {
        "ca": ca.cert_pem.bytes(),
        "cert": one.cert_chain_pems[0].bytes(),
        "key": one.private_key_pem.bytes(),
        "other_key": other.private_key_pem.bytes(),
        "not_pem": b"this is not a certificate\n",
    }
    paths = {}
    for name, data in files.items():
        path = folder / f"{name}.pem"
        path.write_bytes(data)
        paths[name] = str(path)
    yield paths


def _route(**fields: object) -> dict[str, object]:
    return {
        "api": "openai-completions",
        "base_url": "https://a.test/v1",
        "models": [{"id": "m"}],
    } | fields


def _bad(pems: dict[str, str]) -> list[tuple[dict[str, object], str]]:
    return [
        ({"proxy": "socks5://127.0.0.1:1080"}, "proxy must be an http:// URL"),
        ({"proxy": "ftp://p:1"}, "proxy must be an http:// URL"),
        ({"proxy": "http://proxy.test:3128\r\nX: y"}, "proxy must not contain control characters"),
        ({"proxy": "http://"}, "proxy has no host"),
        ({"proxy": "http://p:99999"}, "proxy is not a valid URL"),
        ({"proxy": 3128}, "proxy must be a string"),
        ({"ca_file": "/no/such/ca.pem"}, "ca_file: no such file: /no/such/ca.pem"),
        ({"ca_file": pems["not_pem"]}, "holds no PEM certificate"),
        (
            {"client_cert": pems["cert"], "client_key": pems["other_key"]},
            "client_key: does not match",
        ),
        ({"client_key": pems["key"]}, "client_key is set without client_cert"),
        ({"client_cert": pems["not_pem"]}, "client_cert: is not a PEM certificate"),
        ({"client_cert": "/no/cert.pem"}, "client_cert: no such file"),
        ({"max_connections": 0}, "max_connections must be a positive integer"),
        ({"max_connections": True}, "max_connections must be a positive integer"),
        ({"keepalive_s": -1}, "keepalive_s must be a non-negative number"),
        ({"keepalive_s": float("nan")}, "keepalive_s must be a finite number"),
        ({"connect_timeout_ms": 0}, "connect_timeout_ms must be a positive integer"),
    ]


def test_bad_transport_settings_are_invalid_config_naming_the_field(
    pems: dict[str, str],
) -> None:
    for fields, text in _bad(pems):
        field = next(iter(fields)) if len(fields) == 1 else "client_key"
        with pytest.raises(HarnessError) as info:
            resolve_profiles({"providers": {"p": _route(**fields)}})
        assert info.value.code == "INVALID_CONFIG", fields
        assert f"providers.p.{field}" in info.value.message and text in info.value.message
        with pytest.raises(LlmError) as info:
            DeepSeekAdapter(api_key="k", **fields)  # type: ignore[arg-type]
        assert info.value.code == "INVALID_CONFIG"
        assert f"deepseek.{field}" in info.value.message and text in info.value.message
        with pytest.raises(LlmError) as info:
            DeepSeekAdapter.from_config({"api_key": "k", **fields})  # the [deepseek] section
        assert f"deepseek.{field}" in info.value.message


def test_good_transport_settings_load_on_both_routes(pems: dict[str, str]) -> None:
    fields = {
        "proxy": "http://alice:pw%40x@proxy.test:3128",
        "ca_file": pems["ca"],
        "client_cert": pems["cert"],
        "client_key": pems["key"],
        "max_connections": 7,
        "keepalive_s": 0,
        "connect_timeout_ms": 5000,
    }
    profile = resolve_profiles({"providers": {"p": _route(**fields)}})
    expected = TransportSettings(**fields)  # type: ignore[arg-type]
    assert profile["p"].transport_settings == expected
    assert DeepSeekAdapter(api_key="k", **fields).config.transport_settings == expected  # type: ignore[arg-type]
    assert (
        resolve_profiles({"providers": {"p": _route(proxy="none")}})["p"].transport_settings.proxy
        == "none"
    )


def test_the_proxy_password_never_shows_in_a_repr() -> None:
    proxy = "http://alice:hunter2-secret@proxy.test:3128"
    profile = resolve_profiles({"providers": {"p": _route(proxy=proxy)}})
    config = DeepSeekAdapter(api_key="k", proxy=proxy).config
    for shown in (repr(TransportSettings(proxy=proxy)), repr(profile["p"]), repr(config)):
        assert "hunter2-secret" not in shown
    assert "http://alice:***@proxy.test:3128" in repr(TransportSettings(proxy=proxy))
    assert proxy_secrets(proxy) == ("hunter2-secret",)
    assert proxy_secrets(None, {"HTTPS_PROXY": "http://u:p%21w@p:1"}) == ("p%21w", "p!w")


@pytest.mark.parametrize(
    "header",
    [{"X-Evil": "a\r\nInjected: 1"}, {"X-Nul": "a\x00"}, {"Bad Name": "sk-v4lue"}, {"X-Uni": "ü€"}],
)
def test_profile_headers_are_checked_at_load(header: dict[str, str]) -> None:
    with pytest.raises(HarnessError) as info:
        resolve_profiles({"providers": {"p": _route(headers=header)}})
    assert info.value.code == "INVALID_CONFIG" and "providers.p.headers" in info.value.message
    assert next(iter(header.values())) not in info.value.message


@pytest.mark.parametrize(
    ("no_proxy", "host", "port", "bypass"),
    [
        ("*", "api.test", 443, True),
        ("example.com", "example.com", 443, True),
        ("example.com", "api.example.com", 443, True),
        (".example.com", "api.example.com", 443, True),
        ("example.com", "notexample.com", 443, False),
        ("10.0.0.0/8", "10.1.2.3", 443, True),
        ("10.0.0.0/8", "11.1.2.3", 443, False),
        ("127.0.0.1", "127.0.0.1", 80, True),
        ("::1", "::1", 80, True),
        ("[::1]:8080", "::1", 8080, True),
        ("api.test:8443", "api.test", 443, False),
        ("api.test:8443", "api.test", 8443, True),
        ("a.test, b.test", "b.test", 443, True),
        ("", "b.test", 443, False),
    ],
)
def test_no_proxy_rules(no_proxy: str, host: str, port: int, bypass: bool) -> None:
    assert no_proxy_matches(no_proxy, host, port) is bypass


def test_proxy_from_the_environment_as_curl_and_httpx_read_it() -> None:
    env = {"HTTPS_PROXY": "http://upper:3128", "https_proxy": "http://lower:3128"}
    found = proxy_for(True, "api.test", 443, None, env)
    assert found is not None and found.host == "lower"  # lower case first
    env = {"HTTP_PROXY": "proxy.test:8080", "ALL_PROXY": "http://all:1"}
    found = proxy_for(False, "api.test", 80, None, env)
    assert found is not None and (found.host, found.port) == ("proxy.test", 8080)  # no scheme
    assert proxy_for(True, "api.test", 443, None, env) is not None  # ALL_PROXY for https
    assert proxy_for(True, "127.0.0.1", 443, None, {"ALL_PROXY": "http://p:1"}) is not None
    assert (
        proxy_for(
            True, "127.0.0.1", 443, None, {"ALL_PROXY": "http://p:1", "no_proxy": "127.0.0.1"}
        )
        is None
    )
    assert proxy_for(True, "api.test", 443, "none", {"ALL_PROXY": "http://p:1"}) is None
    route = proxy_for(True, "api.test", 443, "http://u:p@route:9", {"ALL_PROXY": "http://p:1"})
    assert route is not None and route.host == "route" and route.authorization == "Basic dTpw"
    with pytest.raises(ProxyError, match=r"socks5://u:\*\*\*@p:1 \(HTTPS_PROXY\)") as info:
        proxy_for(True, "api.test", 443, None, {"HTTPS_PROXY": "socks5://u:pw@p:1"})
    assert "pw@" not in info.value.reason


def test_the_readme_network_profile_loads() -> None:
    import re
    import tomllib

    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    match = re.search(r"```toml\n(\[providers\.corp\].*?)```", readme, re.DOTALL)
    assert match is not None, "the README shows no network profile"
    raw = tomllib.loads(match.group(1))["providers"]["corp"]
    raw.pop("ca_file")  # the README's path does not exist here
    settings = resolve_profiles({"providers": {"corp": raw}})["corp"].transport_settings
    assert settings.proxy == "http://proxy.corp.example:3128"
    assert (settings.max_connections, settings.keepalive_s, settings.connect_timeout_ms) == (
        100,
        15,
        30_000,
    )
