"""Anthropic on Amazon Bedrock (`anthropic-bedrock`) and on Google Vertex AI (`anthropic-vertex`)
end to end: routes of those apis on `ProvidersAdapter`, the recorded bodies served by real
127.0.0.1 servers that check the URL shapes and the auth headers — SigV4 verified as the
service would, a Bedrock API key, a Google access token (given, ambient, or minted from a
service-account key whose RS256 JWT the token server verifies, or from an authorized_user
refresh token) — and the request bodies against the recorded requests."""

from __future__ import annotations

import base64
import json
import re
import sys
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, unquote

import pytest
from aiohttp import web
from bedrock_fixtures import SECRET, Bedrock, signature_valid
from collection3 import cut, folder, recordings
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding, rsa
from providers_fixtures import check_assembled, start_site
from tinyproxy import TinyProxy

from modelwire.adapters.providers import ProvidersAdapter
from modelwire.adapters.providers.dispatch import resolve_endpoint
from modelwire.assembler import BlockAssembler
from modelwire.errors import LlmError
from modelwire.vocab import GenerateOptions, StreamChunk, user_message

INVOKE = recordings("bedrock-invoke")
VERTEX_SSE = folder("anthropic-messages") / "fantasy-vertex-claude37-tool.sse"
HAIKU = "us.anthropic.claude-haiku-4-5-20251001-v1:0"
VERTEX_MODEL = "claude-3-7-sonnet@20250219"


def _expected(path: Path) -> dict[str, Any]:
    expected: dict[str, Any] = json.loads(path.with_suffix(".expected.json").read_text())
    return expected


def _blocks(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Messages with a string content written as its one text block (the same request)."""
    return [
        {**m, "content": [{"type": "text", "text": m["content"]}]}
        if isinstance(m["content"], str)
        else m
        for m in messages
    ]


def _assemble(chunks: list[StreamChunk]) -> BlockAssembler:
    asm = BlockAssembler()
    for chunk in chunks:
        asm.push(chunk)
    return asm


async def _run(
    adapter: ProvidersAdapter, route: str, model: str, text: str = "hi", **options: Any
) -> list[StreamChunk]:
    ask = GenerateOptions(provider=route, model=model, messages=(user_message(text),), **options)
    return [chunk async for chunk in adapter.stream(ask)]


# ---- Bedrock -------------------------------------------------------------------------------


def _bedrock(url: str, env: dict[str, str], **route: Any) -> ProvidersAdapter:
    profile = {"api": "anthropic-bedrock", "base_url": url, "models": [{"id": HAIKU}], **route}
    return ProvidersAdapter.from_config({"providers": {"claude-br": profile}}, env=env)


@pytest.mark.parametrize("path", [pytest.param(p, id=p.stem) for p in INVOKE])
async def test_bedrock_invoke_recording_streams_through_the_route_to_expected(path: Path) -> None:
    async with Bedrock(path.read_bytes()) as server:  # served in 613-byte pieces
        adapter = _bedrock(server.url, {"K": "bedrock-key-123"}, api_key_env="K")
        chunks = await _run(adapter, "claude-br", HAIKU)
    check_assembled(
        "anthropic-messages",
        _assemble(chunks),
        _expected(path),
        chunks,
        envelope_api="anthropic-bedrock",
    )


async def test_bedrock_invoke_request_is_signed_sigv4_on_the_invoke_path() -> None:
    env = {"AWS_ACCESS_KEY_ID": "AKIDEXAMPLE", "AWS_SECRET_ACCESS_KEY": SECRET}
    async with Bedrock(INVOKE[0].read_bytes()) as server:
        await _run(_bedrock(server.url, env, region="us-east-1"), "claude-br", HAIKU)
    raw_path, headers, sent = server.requests[0]
    assert raw_path == (
        "/model/us.anthropic.claude-haiku-4-5-20251001-v1%3A0/invoke-with-response-stream"
    )
    assert headers["authorization"].startswith("AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/")
    assert "/us-east-1/bedrock/aws4_request" in headers["authorization"]
    assert signature_valid(raw_path, headers, sent)
    assert headers["accept"] == "application/vnd.amazon.eventstream"
    assert "anthropic-version" not in headers and "x-api-key" not in headers


async def test_bedrock_invoke_body_is_the_messages_body_with_bedrocks_version() -> None:
    recorded = json.loads(
        next(p for p in INVOKE if "opus46" in p.name).with_suffix(".request.json").read_text()
    )
    async with Bedrock(INVOKE[1].read_bytes()) as server:
        env = {"AWS_BEARER_TOKEN_BEDROCK": "bedrock-api-key-1"}
        adapter = _bedrock(server.url, env, cache_retention="none")  # as the recording asked
        await _run(
            adapter,
            "claude-br",
            HAIKU,
            recorded["messages"][0]["content"][0]["text"],
            system=recorded["system"][0]["text"],
            max_tokens=recorded["max_tokens"],
        )
    _, headers, sent = server.requests[0]
    assert headers["authorization"] == "Bearer bedrock-api-key-1"
    body = json.loads(sent)
    assert body["anthropic_version"] == recorded["anthropic_version"] == "bedrock-2023-05-31"
    assert "model" not in body and "stream" not in body  # the path names and streams it
    assert _blocks(body["messages"]) == recorded["messages"]
    assert [s["text"] for s in body["system"]] == [s["text"] for s in recorded["system"]]
    assert body["max_tokens"] == recorded["max_tokens"]
    assert body["anthropic_beta"] == ["interleaved-thinking-2025-05-14"]  # not a header


def test_bedrock_invoke_route_without_base_url_targets_its_regions_runtime() -> None:
    adapter = ProvidersAdapter.from_config(
        {"providers": {"br": {"api": "anthropic-bedrock", "models": [{"id": HAIKU}]}}},
        env={"AWS_REGION": "eu-west-3"},
    )
    profile = adapter._snapshot.profiles["br"]
    model = resolve_endpoint(profile, profile.models[HAIKU], {"AWS_REGION": "eu-west-3"})
    assert model.base_url == "https://bedrock-runtime.eu-west-3.amazonaws.com"


# ---- Vertex --------------------------------------------------------------------------------


class Vertex:
    """A loopback stand-in for Vertex AI and Google's token endpoint: `/token` answers token
    requests (checked by `check_token`, which returns the token to hand out or None to refuse),
    every other path streams `body` in pieces."""

    def __init__(self, body: bytes, check_token: Callable[[dict[str, str]], str | None]) -> None:
        self.body = body
        self.check_token = check_token
        self.calls: list[tuple[str, dict[str, str], bytes]] = []
        self.tokens: list[dict[str, str]] = []
        self.url = ""
        self._runner: web.AppRunner | None = None

    async def __aenter__(self) -> Vertex:
        async def token(request: web.Request) -> web.StreamResponse:
            form = {k: v[0] for k, v in parse_qs((await request.read()).decode()).items()}
            self.tokens.append(form)
            granted = self.check_token(form)
            if granted is None:
                error = {"error": "invalid_grant", "error_description": "Bad Request"}
                return web.json_response(error, status=400)
            return web.json_response({"access_token": granted, "expires_in": 3599})

        async def predict(request: web.Request) -> web.StreamResponse:
            raw = await request.read()
            seen = {k.lower(): v for k, v in request.headers.items()}
            self.calls.append((request.raw_path, seen, raw))
            response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
            await response.prepare(request)
            for piece in cut(self.body, range(97, len(self.body), 389)):
                await response.write(piece)
            await response.write_eof()
            return response

        app = web.Application()
        app.router.add_post("/token", token)
        app.router.add_route("*", "/{tail:.*}", predict)
        self._runner, self.url = await start_site(app)
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._runner is not None
        await self._runner.cleanup()


def _now() -> float:
    return 1_700_000_000.0


def _vertex(
    url: str, env: dict[str, str], clock: Callable[[], float] = _now, **route: Any
) -> ProvidersAdapter:
    profile = {
        "api": "anthropic-vertex",
        "base_url": url,
        "region": "us-east5",
        "models": [{"id": VERTEX_MODEL}],
        **route,
    }
    return ProvidersAdapter.from_config({"providers": {"claude-vx": profile}}, env=env, clock=clock)


VERTEX_PATH = (
    "/v1/projects/my-project/locations/us-east5/publishers/anthropic/models/"
    "claude-3-7-sonnet@20250219:streamRawPredict"
)


def _refuse(form: dict[str, str]) -> str | None:
    return None


async def test_vertex_recording_streams_with_an_access_token_on_the_predict_path() -> None:
    recorded = json.loads(VERTEX_SSE.with_suffix(".request.json").read_text())
    async with Vertex(VERTEX_SSE.read_bytes(), _refuse) as server:
        adapter = _vertex(
            server.url,
            {"TOK": "ya29.given-token"},
            api_key_env="TOK",
            project="my-project",
            cache_retention="none",  # as the recording asked
        )
        chunks = await _run(
            adapter,
            "claude-vx",
            VERTEX_MODEL,
            recorded["messages"][0]["content"][0]["text"],
            system=recorded["system"][0]["text"],
            max_tokens=recorded["max_tokens"],
        )
    check_assembled(
        "anthropic-messages",
        _assemble(chunks),
        _expected(VERTEX_SSE),
        chunks,
        envelope_api="anthropic-vertex",
    )
    raw_path, headers, sent = server.calls[0]
    assert raw_path == VERTEX_PATH
    assert headers["authorization"] == "Bearer ya29.given-token"
    assert "x-api-key" not in headers and "anthropic-version" not in headers
    body = json.loads(sent)
    assert body["anthropic_version"] == recorded["anthropic_version"] == "vertex-2023-10-16"
    assert body["stream"] is recorded["stream"] is True
    assert "model" not in body
    assert _blocks(body["messages"]) == recorded["messages"]
    assert server.tokens == []


async def test_vertex_takes_an_ambient_access_token_and_the_project_from_the_environment() -> None:
    env = {"GOOGLE_OAUTH_ACCESS_TOKEN": "ya29.ambient", "GOOGLE_CLOUD_PROJECT": "my-project"}
    async with Vertex(VERTEX_SSE.read_bytes(), _refuse) as server:
        chunks = await _run(_vertex(server.url, env), "claude-vx", VERTEX_MODEL)
    assert _assemble(chunks).finish.kind == "tool-calls"
    raw_path, headers, _ = server.calls[0]
    assert raw_path == VERTEX_PATH
    assert headers["authorization"] == "Bearer ya29.ambient"


def _service_account(tmp_path: Path, token_uri: str) -> tuple[Path, rsa.RSAPublicKey]:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    ).decode()
    info = {
        "type": "service_account",
        "project_id": "my-project",
        "private_key_id": "kid-1",
        "private_key": pem,
        "client_email": "agent@my-project.iam.gserviceaccount.com",
        "token_uri": token_uri,
    }
    path = tmp_path / "sa.json"
    path.write_text(json.dumps(info))
    return path, key.public_key()


def _segments(jwt: str) -> tuple[dict[str, Any], dict[str, Any], bytes, bytes]:
    head, claims, signature = jwt.split(".")

    def unb64(text: str) -> bytes:
        return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))

    return (
        json.loads(unb64(head)),
        json.loads(unb64(claims)),
        f"{head}.{claims}".encode(),
        unb64(signature),
    )


async def test_vertex_mints_a_token_from_a_service_account_key_signed_rs256(
    tmp_path: Path,
) -> None:
    seen: dict[str, Any] = {}

    def check(form: dict[str, str]) -> str | None:
        header, claims, signed, signature = _segments(form["assertion"])
        public.verify(signature, signed, padding.PKCS1v15(), hashes.SHA256())  # raises if bad
        seen.update(form=form, header=header, claims=claims)
        return "ya29.from-service-account"

    clock = [1_700_000_000.0]
    async with Vertex(VERTEX_SSE.read_bytes(), check) as server:
        path, public = _service_account(tmp_path, f"{server.url}/token")
        env = {"GOOGLE_APPLICATION_CREDENTIALS": str(path)}
        adapter = _vertex(server.url, env, clock=lambda: clock[0])
        await _run(adapter, "claude-vx", VERTEX_MODEL)
        await _run(adapter, "claude-vx", VERTEX_MODEL)  # the cached token
        clock[0] += 3600  # past its expiry (less a minute): minted again
        await _run(adapter, "claude-vx", VERTEX_MODEL)
    assert len(server.tokens) == 2
    assert seen["form"]["grant_type"] == "urn:ietf:params:oauth:grant-type:jwt-bearer"
    assert seen["header"] == {"alg": "RS256", "typ": "JWT", "kid": "kid-1"}
    claims = seen["claims"]
    assert claims["iss"] == "agent@my-project.iam.gserviceaccount.com"
    assert claims["aud"] == f"{server.url}/token"
    assert claims["scope"] == "https://www.googleapis.com/auth/cloud-platform"
    assert claims["exp"] - claims["iat"] == 3600 and claims["iat"] == int(clock[0])
    assert [c[0] for c in server.calls] == [VERTEX_PATH] * 3  # project from the key file
    assert {c[1]["authorization"] for c in server.calls} == {"Bearer ya29.from-service-account"}


async def test_vertex_refreshes_an_authorized_user_adc_file(tmp_path: Path) -> None:
    def check(form: dict[str, str]) -> str | None:
        ok = form == {
            "grant_type": "refresh_token",
            "client_id": "cid.apps.googleusercontent.com",
            "client_secret": "csecret-1",
            "refresh_token": "1//refresh-token",
        }
        return "ya29.from-refresh" if ok else None

    async with Vertex(VERTEX_SSE.read_bytes(), check) as server:
        adc = tmp_path / "gcloud" / "application_default_credentials.json"
        adc.parent.mkdir()
        adc.write_text(
            json.dumps(
                {
                    "type": "authorized_user",
                    "client_id": "cid.apps.googleusercontent.com",
                    "client_secret": "csecret-1",
                    "refresh_token": "1//refresh-token",
                    "quota_project_id": "my-project",
                    "token_uri": f"{server.url}/token",
                }
            )
        )
        env = {"CLOUDSDK_CONFIG": str(adc.parent)}
        chunks = await _run(_vertex(server.url, env), "claude-vx", VERTEX_MODEL)
    assert _assemble(chunks).finish.kind == "tool-calls"
    assert server.calls[0][0] == VERTEX_PATH
    assert server.calls[0][1]["authorization"] == "Bearer ya29.from-refresh"


async def test_vertex_token_exchange_goes_through_the_routes_proxy(tmp_path: Path) -> None:
    """The token endpoint is called the way the route calls its model: through its proxy."""

    def check(form: dict[str, str]) -> str | None:
        return "ya29.via-proxy" if form.get("refresh_token") == "1//refresh-token" else None

    async with Vertex(VERTEX_SSE.read_bytes(), check) as server:
        path = tmp_path / "adc.json"
        path.write_text(
            json.dumps(
                {
                    "type": "authorized_user",
                    "client_id": "cid",
                    "client_secret": "csecret-2",
                    "refresh_token": "1//refresh-token",
                    "token_uri": f"{server.url}/token",
                }
            )
        )
        env = {"GOOGLE_APPLICATION_CREDENTIALS": str(path), "GOOGLE_CLOUD_PROJECT": "my-project"}
        with TinyProxy() as proxy:
            adapter = _vertex(server.url, env, proxy=proxy.bare_url)
            chunks = await _run(adapter, "claude-vx", VERTEX_MODEL)
            seen = proxy.log()
    assert _assemble(chunks).finish.kind == "tool-calls"
    assert server.calls[0][1]["authorization"] == "Bearer ya29.via-proxy"
    assert f"{server.url}/token" in seen, seen[-2000:]  # the exchange, through the proxy
    assert VERTEX_PATH.split(":")[0] in seen  # and the model call


async def test_vertex_refused_refresh_token_is_auth_and_shows_no_secret(tmp_path: Path) -> None:
    async with Vertex(VERTEX_SSE.read_bytes(), _refuse) as server:
        path = tmp_path / "user.json"
        path.write_text(
            json.dumps(
                {
                    "type": "authorized_user",
                    "client_id": "cid",
                    "client_secret": "csecret-very-secret",
                    "refresh_token": "1//refresh-very-secret",
                    "token_uri": f"{server.url}/token",
                }
            )
        )
        env = {"GOOGLE_APPLICATION_CREDENTIALS": str(path), "GOOGLE_CLOUD_PROJECT": "p-1"}
        with pytest.raises(LlmError) as info:
            await _run(_vertex(server.url, env), "claude-vx", VERTEX_MODEL)
    assert info.value.code == "AUTH"
    assert 'route "claude-vx"' in info.value.message and "invalid_grant" in info.value.message
    text = repr(info.value) + str(info.value.__cause__)
    assert "very-secret" not in text
    assert server.calls == []


async def test_vertex_without_credentials_fails_before_any_request(tmp_path: Path) -> None:
    async with Vertex(VERTEX_SSE.read_bytes(), _refuse) as server:
        env = {"HOME": str(tmp_path), "GOOGLE_CLOUD_PROJECT": "p-1"}
        with pytest.raises(LlmError) as info:
            await _run(_vertex(server.url, env), "claude-vx", VERTEX_MODEL)
    assert info.value.code == "MISSING_CREDENTIAL"
    assert "GOOGLE_APPLICATION_CREDENTIALS" in info.value.message
    assert server.calls == [] and server.tokens == []


@pytest.mark.parametrize(
    ("route", "env", "missing"),
    [
        pytest.param({"region": None}, {"GOOGLE_CLOUD_PROJECT": "p"}, "location", id="location"),
        pytest.param({}, {}, "Google Cloud project", id="project"),
    ],
)
async def test_vertex_route_without_location_or_project_is_invalid_config(
    route: dict[str, Any], env: dict[str, str], missing: str, tmp_path: Path
) -> None:
    profile = {
        "api": "anthropic-vertex",
        "base_url": "http://127.0.0.1:9",
        "region": "us-east5",
        "models": [{"id": VERTEX_MODEL}],
    }
    profile.update({k: v for k, v in route.items() if v is not None})
    for key in [k for k, v in route.items() if v is None]:
        profile.pop(key)
    adapter = ProvidersAdapter.from_config(
        {"providers": {"vx": profile}},
        env={"GOOGLE_OAUTH_ACCESS_TOKEN": "ya29.x", "HOME": str(tmp_path), **env},
    )
    with pytest.raises(LlmError) as info:
        await _run(adapter, "vx", VERTEX_MODEL)
    assert info.value.code == "INVALID_CONFIG"
    assert missing in info.value.message and 'route "vx"' in info.value.message


def test_vertex_global_location_has_no_region_prefix() -> None:
    adapter = ProvidersAdapter.from_config(
        {
            "providers": {
                "vx": {
                    "api": "anthropic-vertex",
                    "region": "global",
                    "project": "p-9",
                    "models": [{"id": VERTEX_MODEL}],
                }
            }
        },
        env={},
    )
    profile = adapter._snapshot.profiles["vx"]
    model = resolve_endpoint(profile, profile.models[VERTEX_MODEL], {})
    assert model.base_url == (
        "https://aiplatform.googleapis.com/v1/projects/p-9/locations/global/publishers/"
        "anthropic/models"
    )
    assert unquote(model.base_url) == model.base_url


async def test_a_service_account_key_without_the_vertex_extra_names_the_extra(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path, _ = _service_account(tmp_path, "http://127.0.0.1:9/token")
    monkeypatch.setitem(sys.modules, "cryptography.hazmat.primitives", None)  # not installed
    env = {"GOOGLE_APPLICATION_CREDENTIALS": str(path)}
    adapter = _vertex("http://127.0.0.1:9", env)
    with pytest.raises(LlmError) as info:
        await _run(adapter, "claude-vx", VERTEX_MODEL)
    assert info.value.code == "INVALID_CONFIG"
    assert 'pip install "modelwire[vertex]"' in info.value.message
    assert "PRIVATE KEY" not in info.value.message


@pytest.mark.parametrize(
    ("content", "code"),
    [
        pytest.param('{"type": "external_account"}', "INVALID_CREDENTIAL", id="other-type"),
        pytest.param("not json", "INVALID_CREDENTIAL", id="not-json"),
        pytest.param('{"type": "service_account"}', "INVALID_CREDENTIAL", id="no-key"),
    ],
)
async def test_an_unusable_google_credentials_file_is_named_without_its_content(
    tmp_path: Path, content: str, code: str
) -> None:
    path = tmp_path / "creds.json"
    path.write_text(content)
    env = {"GOOGLE_APPLICATION_CREDENTIALS": str(path), "GOOGLE_CLOUD_PROJECT": "p-1"}
    with pytest.raises(LlmError) as info:
        await _run(_vertex("http://127.0.0.1:9", env), "claude-vx", VERTEX_MODEL)
    assert info.value.code == code
    assert str(path) in info.value.message


def test_the_readme_cloud_profiles_load_and_target_their_endpoints() -> None:
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    [block] = [b for b in re.findall(r"```toml\n(.*?)```", readme, re.S) if "anthropic-vertex" in b]
    config = tomllib.loads("\n".join(line.strip() for line in block.splitlines()))
    env = {"GOOGLE_OAUTH_ACCESS_TOKEN": "ya29.x", "AWS_BEARER_TOKEN_BEDROCK": "k"}
    adapter = ProvidersAdapter.from_config(config, env=env)
    urls = {}
    for route, profile in adapter._snapshot.profiles.items():
        [model] = profile.models.values()
        urls[route] = resolve_endpoint(profile, model, env).base_url
    assert urls == {
        "claude-vertex": "https://us-east5-aiplatform.googleapis.com/v1/projects/my-project/"
        "locations/us-east5/publishers/anthropic/models",
        "claude-bedrock": "https://bedrock-runtime.us-east-1.amazonaws.com",
    }
