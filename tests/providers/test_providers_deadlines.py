"""Deadlines that hold (issue #16): `timeout_ms` is the call's total deadline, a first-token
deadline sits beside the idle watchdog, and keep-alive comments re-arm only the idle one. The
call's deadlines are the runtime boundary's (issue #32: one place for every adapter), so each call
here goes through an `LlmRuntime`; the route's values are its defaults.

Each server here stalls or pulses forever, so only the deadline under test can end the call;
the other budgets are set far larger, so the outcome never depends on the machine's speed.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import pytest
from aiohttp import web
from providers_fixtures import start_site

from modelwire import LlmRuntime
from modelwire.adapters.providers import ProvidersAdapter
from modelwire.vocab import Error, Finish, GenerateOptions, StreamChunk, TextDelta, user_message

_EVENT = b'data: {"id":"c1","model":"m","choices":[{"index":0,"delta":{"content":"hi"}}]}\n\n'


class Pulsing:
    """A loopback SSE server: sends `first` reads, then a keep-alive comment every `every`
    seconds until the client goes away."""

    def __init__(self, first: list[bytes], every: float = 0.005) -> None:
        self.first = first
        self.every = every
        self.url = ""
        self.gone = asyncio.Event()
        self.stop = asyncio.Event()
        self._runner: web.AppRunner | None = None

    async def __aenter__(self) -> Pulsing:
        async def handle(request: web.Request) -> web.StreamResponse:
            await request.read()
            response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
            await response.prepare(request)
            try:
                for data in self.first:
                    await response.write(data)
                while not self.stop.is_set():
                    await response.write(b": keep-alive\n\n")
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(self.stop.wait(), self.every)
            except (ConnectionResetError, asyncio.CancelledError):
                self.gone.set()
                raise
            return response

        app = web.Application()
        app.router.add_post("/v1/chat/completions", handle)
        self._runner, self.url = await start_site(app)
        self.url += "/v1"
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.stop.set()
        assert self._runner is not None
        await self._runner.cleanup()


def _adapter(url: str, **fields: Any) -> ProvidersAdapter:
    profile = {
        "api": "openai-completions",
        "base_url": url,
        "auth": "none",
        "models": [{"id": "m"}],
        **fields,
    }
    return ProvidersAdapter.from_config({"providers": {"relay": profile}}, env={})


def _opts(**fields: Any) -> GenerateOptions:
    return GenerateOptions("relay", "m", (user_message("hello"),), **fields)


class _Failure:
    def __init__(self, finish: StreamChunk) -> None:
        assert isinstance(finish, Finish) and isinstance(finish.reason, Error)
        self.code = finish.reason.failure.code
        self.message = finish.reason.failure.message


async def _drain(
    adapter: ProvidersAdapter, options: GenerateOptions
) -> tuple[list[StreamChunk], _Failure]:
    rt = LlmRuntime()
    rt.register_adapter(["relay"], adapter)
    seen: list[StreamChunk] = []
    async with rt.stream(options) as stream:
        async for chunk in stream:
            seen.append(chunk)
    return seen[:-1], _Failure(seen[-1])


async def test_total_deadline_fires_through_endless_keep_alives() -> None:
    async with Pulsing([_EVENT]) as server:
        adapter = _adapter(server.url, timeout_ms=150, stream_idle_timeout_ms=60_000)
        seen, error = await _drain(adapter, _opts())
        await asyncio.wait_for(server.gone.wait(), 10)
    assert error.code == "TIMEOUT"
    assert "total deadline of 150ms (timeout_ms)" in error.message
    assert 'provider "relay" model "m"' in error.message
    assert any(isinstance(c, TextDelta) for c in seen)  # the chunks before it were delivered


async def test_per_call_timeout_overrides_the_route() -> None:
    async with Pulsing([_EVENT]) as server:
        adapter = _adapter(server.url, timeout_ms=600_000, stream_idle_timeout_ms=60_000)
        _, error = await _drain(adapter, _opts(timeout_ms=120))
    assert error.code == "TIMEOUT" and "total deadline of 120ms" in error.message


async def test_first_token_deadline_is_not_met_by_keep_alives() -> None:
    async with Pulsing([]) as server:
        adapter = _adapter(server.url, first_token_timeout_ms=150, stream_idle_timeout_ms=60_000)
        seen, error = await _drain(adapter, _opts())
    assert seen == []
    assert error.code == "TIMEOUT"
    assert "no first token within 150ms (first_token_timeout_ms)" in error.message


async def test_first_token_deadline_stops_counting_once_a_chunk_arrived() -> None:
    """After the first chunk only the idle budget (here the stall mid-stream) can fire."""
    async with Pulsing([_EVENT], every=3600) as server:
        adapter = _adapter(server.url, first_token_timeout_ms=60_000, stream_idle_timeout_ms=120)
        seen, error = await _drain(adapter, _opts())
    assert any(isinstance(c, TextDelta) for c in seen)
    assert error.code == "TIMEOUT" and "idle timeout after 120ms" in error.message


async def test_stall_before_the_first_byte_is_the_idle_deadline() -> None:
    async with Pulsing([], every=3600) as server:
        adapter = _adapter(server.url, stream_idle_timeout_ms=120)
        _, error = await _drain(adapter, _opts())
    assert error.code == "TIMEOUT" and "idle timeout after 120ms" in error.message


@pytest.mark.parametrize(
    ("field", "value"),
    [("timeout_ms", -1), ("timeout_ms", 1.5), ("first_token_timeout_ms", 0)],
)
def test_deadline_fields_are_validated(field: str, value: object) -> None:
    from modelwire.errors import HarnessError

    with pytest.raises(HarnessError) as info:
        _adapter("http://127.0.0.1:9/v1", **{field: value})
    assert info.value.code == "INVALID_CONFIG" and f"providers.relay.{field}" in info.value.message


def test_timeout_zero_means_no_total_deadline() -> None:
    adapter = _adapter("http://127.0.0.1:9/v1", timeout_ms=0)
    assert adapter.snapshot.profiles["relay"].timeout_ms is None
