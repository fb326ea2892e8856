"""A real aiohttp.web server on 127.0.0.1 that fails every way a provider can while echoing the
caller's credential back: in the request-id headers (``x-request-id``, Anthropic's
``request-id``, ``x-deepseek-request-id``, …), in ``Retry-After``, in the error body and in
in-stream error events.

The echoed value is the credential the server *received* (the ``Authorization`` bearer token or
``x-api-key``), so a pass also proves the real key went out. Set `scenario` before each request;
`SCENARIOS` lists them, `IN_STREAM` the ones answered with a 200 event stream.
"""

from __future__ import annotations

from typing import Final

from aiohttp import web
from catchall import serve_all
from reliability_wire import good_events, sse, text_events

__all__ = ["IN_STREAM", "SCENARIOS", "EchoServer"]

SCENARIOS: Final = (
    "http-401",
    "http-429",
    "http-429-fallback-id",
    "http-503-plain-text",
    "http-500-long",
    "stream-error",
    "stream-odd-stop",
    "stream-malformed",
)
IN_STREAM: Final = frozenset(s for s in SCENARIOS if s.startswith("stream-"))


def _credentials(request: web.Request) -> list[str]:
    """Every credential the request carried: the bearer token or ``x-api-key`` first, then any
    configured gateway token."""
    found = [
        request.headers.get("Authorization", "").partition(" ")[2],
        request.headers.get("x-api-key", ""),
        request.headers.get("x-gateway-token", ""),
    ]
    return [value for value in found if value] or ["no-key-sent"]


def _echo_headers(key: str, *, primary: bool = True) -> dict[str, str]:
    headers = {
        "request-id": key,  # Anthropic's request id header
        "x-deepseek-request-id": key,
        "openai-request-id": key,
        "cf-ray": key,
        "x-echo": f"Bearer {key}",
        "retry-after": key,  # garbage: no header-derived value may carry it either
    }
    if primary:
        headers["x-request-id"] = key
    return headers


def _error_event(kind: str, text: str) -> bytes:
    if kind in ("deepseek", "openai-completions"):
        return sse({"error": {"message": text, "type": text, "code": text}})
    if kind == "openai-responses":
        return sse({"type": "error", "code": text, "message": text})
    return sse({"type": "error", "error": {"type": text, "message": text}}, "error")


def _odd_stop(kind: str, key: str) -> list[bytes]:
    """A stream that ends with a provider stop signal spelled as the key."""
    if kind in ("deepseek", "openai-completions"):
        stop = {"choices": [{"index": 0, "delta": {}, "finish_reason": f"blocked_{key}"}]}
        return [*text_events(kind, ["partial"])[:2], sse(stop), b"data: [DONE]\n\n"]
    if kind == "openai-responses":
        failed = {
            "type": "response.failed",
            "response": {"id": "r1", "status": "failed", "error": {"code": key, "message": key}},
        }
        return [*good_events(kind)[:3], sse(failed)]
    stop = {"type": "message_delta", "delta": {"stop_reason": key}, "usage": {"output_tokens": 1}}
    events = good_events(kind)
    return [*events[:-2], sse(stop, "message_delta"), events[-1]]


def _stream(kind: str, scenario: str, key: str) -> list[bytes]:
    if scenario == "stream-error":
        events = good_events(kind)[:2]
        events.append(_error_event(kind, f"upstream rejected key {key} (Bearer {key})"))
        if kind in ("deepseek", "openai-completions"):
            events.append(b"data: [DONE]\n\n")
        return events
    if scenario == "stream-odd-stop":
        return _odd_stop(kind, key)
    return [*good_events(kind)[:1], f'data: {{"broken": "{key}\n\n'.encode()]  # malformed


class EchoServer:
    """The server: `kind` (the adapter's protocol) and `scenario` decide the next answer."""

    def __init__(self) -> None:
        self.kind = "deepseek"
        self.scenario = SCENARIOS[0]
        self.url = ""
        self.received: list[list[str]] = []
        self._runner: web.AppRunner | None = None

    async def __aenter__(self) -> EchoServer:
        self._runner, self.url = await serve_all(self._handle)
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._runner is not None
        await self._runner.cleanup()

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        await request.read()
        sent = _credentials(request)
        self.received.append(sent)
        key, echo = sent[0], " ".join(sent)
        scenario = self.scenario
        if scenario in IN_STREAM:
            response = web.StreamResponse(
                status=200, headers={"Content-Type": "text/event-stream", **_echo_headers(key)}
            )
            await response.prepare(request)
            for event in _stream(self.kind, scenario, echo):
                await response.write(event)
            await response.write_eof()
            return response
        status = int(scenario.split("-")[1])
        headers = _echo_headers(key, primary=scenario != "http-429-fallback-id")
        if scenario == "http-503-plain-text":
            return web.Response(status=status, text=f"upstream saw key {echo}", headers=headers)
        message = f"Incorrect API key provided: {echo} (Authorization: Bearer {key})"
        if scenario == "http-500-long":  # the key straddles the message length limit
            message = "x" * (500 - len(key) // 2) + f"{key} and more: {echo}"
        body = {"error": {"message": message, "type": key, "code": key}}
        return web.json_response(body, status=status, headers=headers)
