"""Per-route TLS (issue 31): `ca_file` verifies an upstream the default store does not know, a
client certificate (`client_cert` / `client_key`) opens a server that requires one (mutual
TLS), and a verify failure says why, on the DeepSeek route and a providers route."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import pytest
import trustme
from transport_upstream import Upstream, deepseek, discover, providers, stream_text

from modelwire.errors import LlmError
from modelwire.wire.http import close_sessions


@pytest.fixture(autouse=True)
async def _fresh_pool() -> AsyncIterator[None]:
    yield
    await close_sessions()


@pytest.fixture(scope="module")
def ca() -> trustme.CA:
    return trustme.CA()


@pytest.fixture(scope="module")
def files(ca: trustme.CA) -> Iterator[dict[str, str]]:
    client = ca.issue_cert("client@example.test")
    with (
        ca.cert_pem.tempfile() as ca_file,
        client.cert_chain_pems[0].tempfile() as cert,
        client.private_key_pem.tempfile() as key,
    ):
        yield {"ca_file": ca_file, "client_cert": cert, "client_key": key}


async def test_mutual_tls_with_the_routes_client_certificate(
    ca: trustme.CA, files: dict[str, str]
) -> None:
    async with Upstream(ca, tls=True, client_ca=True) as up:
        assert await stream_text(deepseek(up.url, **files), "deepseek") == "hello"
        assert await stream_text(providers(up.url, **files), "p") == "hello"
        assert await discover(providers(up.url, **files), up.url) == ["m-one", "m-two"]
        await stream_text(providers(up.url, websocket=True, **files), "p")
        with pytest.raises(LlmError) as info:  # the same server without a client certificate
            await stream_text(deepseek(up.url, ca_file=files["ca_file"]), "deepseek")
    assert info.value.code == "TRANSPORT"


async def test_a_verify_failure_names_its_reason(ca: trustme.CA) -> None:
    async with Upstream(ca, tls=True) as up:
        with pytest.raises(LlmError) as info:
            await stream_text(deepseek(up.url), "deepseek")
    assert info.value.code == "TRANSPORT"
    assert info.value.message == (
        f"DeepSeek API request to {up.url} failed: TLS handshake failed: certificate verify "
        "failed: unable to get local issuer certificate"
    )
