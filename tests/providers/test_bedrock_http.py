"""`bedrock-converse-stream` over a real loopback HTTP server: recorded bodies through the wire
pump and the event-stream framer, recorded HTTP errors mapped to their codes, and a signed
request whose SigV4 signature the server verifies from what it actually received."""

from __future__ import annotations

import hashlib
import hmac
import json
from pathlib import Path
from urllib.parse import quote

import aiohttp
import pytest
import yarl
from aiohttp import web
from bedrock_fixtures import check, error_cases, load, model, record, stream_cases
from providers_fixtures import start_site

from modelwire.adapters.providers.context import NContext, NUser
from modelwire.adapters.providers.protocols.bedrock_converse import PROTOCOL
from modelwire.adapters.providers.protocols.bedrock_errors import (
    bedrock_http_error,
    refine_bedrock_http_error,
)
from modelwire.adapters.providers.protocols.bedrock_stream import BedrockTranslator
from modelwire.adapters.providers.protocols.request import RequestOptions
from modelwire.adapters.providers.protocols.spec import AuthContext
from modelwire.errors import LlmError
from modelwire.vocab import StreamChunk
from modelwire.wire.eventstream import EventStreamDecoder
from modelwire.wire.http import stream_post
from modelwire.wire.pump import StreamSource, pump_sse
from modelwire.wire.status import failure_for_status
from modelwire.wire.watchdog import IdleWatchdog

SECRET = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"
CATEGORY_CODES = {
    "invalid_request": "INVALID_REQUEST",
    "rate_limit": "RATE_LIMIT",
    "auth": "AUTH",
    "server": "SERVER",
    "context_length": "CONTEXT_WINDOW_EXCEEDED",
    "quota": "QUOTA",
    "not_found": "MODEL_NOT_FOUND",
}


class Server:
    """A 127.0.0.1 aiohttp server answering every POST with one scripted reply; it records
    the raw path, headers and body it received."""

    def __init__(self, *, status: int = 200, body: bytes = b"", headers: dict[str, str]) -> None:
        self.status = status
        self.body = body
        self.headers = headers
        self.seen: list[tuple[str, dict[str, str], bytes]] = []
        self.url = ""
        self._runner: web.AppRunner | None = None

    async def __aenter__(self) -> Server:
        async def handle(request: web.Request) -> web.StreamResponse:
            raw = await request.read()
            self.seen.append(
                (request.raw_path, {k.lower(): v for k, v in request.headers.items()}, raw)
            )
            if self.status != 200:
                return web.Response(status=self.status, body=self.body, headers=self.headers)
            response = web.StreamResponse(status=200, headers=self.headers)
            await response.prepare(request)
            for i in range(0, len(self.body), 997):  # odd-sized writes: frames split anywhere
                await response.write(self.body[i : i + 997])
            await response.write_eof()
            return response

        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", handle)
        self._runner, self.url = await start_site(app)
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._runner is not None
        await self._runner.cleanup()


async def _stream(url: str, body: bytes) -> list[StreamChunk]:
    async def open_stream() -> StreamSource:
        watchdog = IdleWatchdog(10_000)
        reads = stream_post(
            url, body, {"Content-Type": "application/json"}, provider="Bedrock",
            endpoint=url, watchdog=watchdog,
        )  # fmt: skip
        return StreamSource(reads, BedrockTranslator(record()), watchdog, EventStreamDecoder())

    return [chunk async for chunk in pump_sse(open_stream, map_error=bedrock_http_error)]


@pytest.mark.parametrize("path", stream_cases())
async def test_recording_over_http_through_the_pump_assembles_to_expected(path: Path) -> None:
    body, expected = load(path)
    headers = {"Content-Type": "application/vnd.amazon.eventstream"}
    async with Server(body=body, headers=headers) as server:
        chunks = await _stream(server.url + "/model/m/converse-stream", b"{}")
    check(chunks, expected)


@pytest.mark.parametrize("path", error_cases())
async def test_recorded_http_error_maps_to_its_code(path: Path) -> None:
    recorded = json.loads(path.read_text())
    expected = json.loads(
        path.with_name(path.name.replace(".http.json", ".expected.json")).read_text()
    )
    async with Server(
        status=recorded["status"], body=recorded["body"].encode(), headers=recorded["headers"]
    ) as server:
        with pytest.raises(LlmError) as err:
            await _stream(server.url + "/model/m/converse-stream", b"{}")
    error = err.value
    assert error.code == CATEGORY_CODES[expected["category"]]
    assert error.status == expected["status"]
    assert expected["error"]["message"] in error.message


@pytest.mark.parametrize(
    ("status", "error_type", "message", "code"),
    [
        (429, "ThrottlingException:http://internal.amazon.com/coral/com.amazon.bedrock/",
         "Too many tokens, please wait before trying again.", "RATE_LIMIT"),
        (400, "ValidationException", "Input is too long for requested model.",
         "CONTEXT_WINDOW_EXCEEDED"),
        (400, "ValidationException", "The provided model identifier is invalid.",
         "INVALID_REQUEST"),
        (400, "ServiceQuotaExceededException", "Your account quota is exceeded.", "QUOTA"),
        (404, "ResourceNotFoundException", "Model not found.", "MODEL_NOT_FOUND"),
        (408, "ModelTimeoutException", "Model timed out.", "TIMEOUT"),
        (403, "AccessDeniedException", "You don't have access.", "AUTH"),
        (403, "UnrecognizedClientException", "The security token is invalid.", "AUTH"),
        (503, "ServiceUnavailableException", "Bedrock is unavailable.", "SERVER"),
        (424, "ModelErrorException", "The model failed.", "SERVER"),
    ],
)  # fmt: skip
async def test_bedrock_error_type_header_refines_the_code_and_request_id_is_kept(
    status: int, error_type: str, message: str, code: str
) -> None:
    headers = {"x-amzn-ErrorType": error_type, "x-amzn-RequestId": "req-123"}
    body = json.dumps({"message": message}).encode()
    async with Server(status=status, body=body, headers=headers) as server:
        watchdog = IdleWatchdog(10_000)
        reads = stream_post(
            server.url + "/model/m/converse-stream", b"{}", {}, provider="Bedrock",
            endpoint=server.url, watchdog=watchdog,
        )  # fmt: skip
        with pytest.raises(LlmError) as err:
            await reads.__anext__()
    mapped = bedrock_http_error(err.value, headers)
    assert mapped.code == code
    assert mapped.status == status
    assert mapped.failure.request_id == "req-123"
    assert message in mapped.message


def test_without_headers_only_overflow_text_is_refined() -> None:
    exc = LlmError("Bedrock API error (HTTP 400): Input is too long", "INVALID_REQUEST", status=400)
    assert bedrock_http_error(exc).code == "CONTEXT_WINDOW_EXCEEDED"
    plain = LlmError("Bedrock API error (HTTP 400): bad", "INVALID_REQUEST", status=400)
    assert bedrock_http_error(plain) is plain
    transport = LlmError("connection reset", "TRANSPORT")
    assert bedrock_http_error(transport, {"x-amzn-ErrorType": "ThrottlingException"}) is transport


def _verify(method: str, raw_path: str, headers: dict[str, str], body: bytes) -> None:
    """SigV4 verification as the service does it, from the request as received."""
    auth = headers["authorization"]
    scope = auth.split("Credential=")[1].split(",")[0].split("/", 1)[1]
    signed = auth.split("SignedHeaders=")[1].split(",")[0]
    signature = auth.split("Signature=")[1]
    day, region, service, _ = scope.split("/")
    payload = hashlib.sha256(body).hexdigest()
    assert headers["x-amz-content-sha256"] == payload
    path, _, query = raw_path.partition("?")
    assert not query
    canonical = "\n".join(
        [
            method,
            quote(path, safe="/~"),  # the received path, URI-encoded once more
            "",
            "".join(f"{n}:{' '.join(headers[n].split())}\n" for n in signed.split(";")),
            signed,
            payload,
        ]
    )
    to_sign = "\n".join(
        [
            "AWS4-HMAC-SHA256",
            headers["x-amz-date"],
            scope,
            hashlib.sha256(canonical.encode()).hexdigest(),
        ]
    )
    key = ("AWS4" + SECRET).encode()
    for part in (day, region, service, "aws4_request"):
        key = hmac.new(key, part.encode(), hashlib.sha256).digest()
    assert hmac.new(key, to_sign.encode(), hashlib.sha256).hexdigest() == signature


async def test_signed_request_verifies_against_the_path_the_server_received() -> None:
    body, _ = load(next(c.values[0] for c in stream_cases() if c.id == "pydantic-nova-micro-text"))
    async with Server(
        body=body, headers={"Content-Type": "application/vnd.amazon.eventstream"}
    ) as server:
        desc = model("us.amazon.nova-micro-v1:0", base_url=server.url)
        request = PROTOCOL.build(desc, NContext(None, (NUser("hi"),), ()), RequestOptions())
        headers = {"Content-Type": "application/json", **request.headers}
        env = {"AWS_ACCESS_KEY_ID": "AKIDEXAMPLE", "AWS_SECRET_ACCESS_KEY": SECRET}
        assert PROTOCOL.authorize is not None
        headers.update(
            PROTOCOL.authorize(
                request, headers, AuthContext("br", env, "us-east-1", lambda: 1.44e9)
            )
        )
        async with aiohttp.ClientSession() as session:
            # the URL must go out byte for byte as signed (no requoting of `%3A` into `:`)
            url = yarl.URL(request.url, encoded=True)
            async with session.post(url, data=request.body, headers=headers) as response:
                assert response.status == 200
                await response.read()
    raw_path, seen, sent = server.seen[0]
    assert raw_path == "/model/us.amazon.nova-micro-v1%3A0/converse-stream"
    assert sent == request.body
    _verify("POST", raw_path, seen, sent)


def test_refine_hook_is_idempotent_and_keeps_status_and_request_id() -> None:
    headers = {"x-amzn-ErrorType": "ThrottlingException:http://x/", "x-amzn-RequestId": "r-1"}
    body = '{"message": "Too many tokens"}'
    exc = failure_for_status(400, body, headers, provider="Bedrock")  # as `stream_post` builds it
    assert exc.code == "INVALID_REQUEST"
    once = refine_bedrock_http_error(exc, body, headers)
    assert (once.code, once.status, once.failure.request_id) == ("RATE_LIMIT", 400, "r-1")
    assert once.message.endswith("(ThrottlingException)")
    assert refine_bedrock_http_error(once, body, headers) is once
    assert PROTOCOL.http_error is refine_bedrock_http_error
