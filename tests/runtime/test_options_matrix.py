"""The options contract, walked whole: every `GenerateOptions` field on every wire family.

For each family of `runtime.options_contract.OPTIONS_CONTRACT` (DeepSeek, every providers
protocol, replay) and each field, the test sets the field on a real call and checks what the
table says happens:

* honoured — the request that reaches a real loopback server differs from the one sent without
  the field (for replay, which sends nothing: the strict comparison with the recording differs);
* hint — the call is sent, never refused;
* refused — the call ends `UNSUPPORTED_OPTION` naming the field, and nothing is sent;
* runtime (the deadlines) — against a server that stalls after its headers (a paced replay),
  a small deadline ends the call `TIMEOUT` naming the deadline's field.

`by-model` fields are honoured or refused as the route's resolved model info says. A family the
table lacks, a field a row lacks, or a field that is neither honoured nor refused fails here. The
deadline checks assert outcomes only (the stalling server would hold the call forever).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import pytest
from aiohttp import web

from modelwire import LlmRuntime
from modelwire.adapters.deepseek import DeepSeekAdapter
from modelwire.adapters.providers import ProvidersAdapter
from modelwire.adapters.providers.protocols.registry import API_NAMES
from modelwire.adapters.replay import ReplayAdapter, ReplayScript
from modelwire.adapters.replay.script import ChunksEntry, RecordedRequest, make_call
from modelwire.runtime.options_contract import FIELDS, OPTIONS_CONTRACT, Support
from modelwire.session.events import EpochHeader
from modelwire.vocab import (
    BlockEnd,
    BlockStart,
    CallConfig,
    Error,
    Finish,
    FinishReason,
    GenerateOptions,
    OutputSchema,
    ResolvedModelInfo,
    Stop,
    TextBlock,
    TextDelta,
    ToolSchema,
    user_message,
)
from modelwire.wire.http import close_sessions

HI = (user_message("matrix hello"),)
TOOL = ToolSchema("lookup", "Look a word up.", {"type": "object", "properties": {}})
SAMPLES: Mapping[str, object] = {
    "system": "matrix system prompt",
    "tools": (TOOL,),
    "temperature": 0.25,
    "max_tokens": 77,
    "stop": ("MATRIX-STOP",),
    "reasoning_effort": "low",
    "session_id": "matrix-session",
    "purpose": "session-title",
    "output": OutputSchema("answer", {"type": "object", "properties": {"a": {"type": "string"}}}),
    "tool_choice": "required",
    "parallel_tool_calls": False,
    "provider_options": {"matrix_extra": 1},
    "timeout_ms": 50,
    "first_token_timeout_ms": 50,
}
"""A value for each optional field (the three the call is made of are always set)."""

NEEDS_TOOLS = frozenset({"tool_choice", "parallel_tool_calls"})
CORE = ("provider", "model", "messages")
REPLY = (BlockStart(0, "text"), TextDelta(0, "ok"), BlockEnd(0, TextBlock("ok")), Finish(Stop()))


@pytest.fixture(autouse=True)
async def _close_pooled_sessions() -> AsyncIterator[None]:
    yield
    await close_sessions()


class Capture:
    """A 127.0.0.1 server answering every path: it records each request (path, headers, body)
    and answers 400, or with `stall` sends 200 SSE headers and then nothing until the test
    ends."""

    def __init__(self) -> None:
        self.requests: list[tuple[str, tuple[tuple[str, str], ...], bytes]] = []
        self.stall = False
        self._release = asyncio.Event()
        self.url = ""
        self._runner: web.AppRunner | None = None

    async def __aenter__(self) -> Capture:
        async def handle(request: web.Request) -> web.StreamResponse:
            body = await request.read()
            headers = tuple(sorted((k.lower(), v) for k, v in request.headers.items()))
            self.requests.append((request.path_qs, headers, body))
            if not self.stall:
                return web.json_response({"error": {"message": "matrix"}}, status=400)
            response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
            await response.prepare(request)
            await self._release.wait()  # held until the test is over
            return response

        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", handle)
        self._runner = web.AppRunner(app)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        self.url = f"http://127.0.0.1:{port}"
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._runner is not None
        self._release.set()
        await self._runner.cleanup()


@dataclass
class Outcome:
    """One call: its finish, and what it sent (None: nothing reached the server)."""

    finish: FinishReason
    sent: object


class Target:
    """A runtime serving one wire family, and how to observe one call on it."""

    def __init__(self, runtime: LlmRuntime, provider: str, model: str, server: Capture) -> None:
        self.runtime = runtime
        self.provider = provider
        self.model = model
        self.server = server

    async def info(self) -> ResolvedModelInfo:
        return await self.runtime.resolve_model_info(self.provider, self.model)

    async def call(self, **fields: Any) -> Outcome:
        before = len(self.server.requests)
        options = GenerateOptions(self.provider, self.model, HI, **fields)
        finish = (await self.runtime.generate(options)).finish
        sent = self.server.requests[-1] if len(self.server.requests) > before else None
        return Outcome(finish, sent)


class ReplayTarget(Target):
    """A strict replay of one recorded call (recorded config: the route and model only): what a
    call "sends" is the strict comparison's verdict. Each call replays a fresh recording."""

    def __init__(self, server: Capture, stall: bool = False) -> None:
        super().__init__(LlmRuntime(), "acme", "acme-1", server)
        self._stall = stall
        self._fresh()

    def _fresh(self) -> None:
        header = EpochHeader(config=CallConfig(self.provider, self.model))
        call = make_call(ChunksEntry(REPLY), RecordedRequest(header, HI), "call 1")
        scripts = [ReplayScript("rec", 0, "test", (call,))]
        pace = 3_600_000 if self._stall else 0  # a stall: an hour before each chunk
        adapter = ReplayAdapter(scripts, strict=True, pace_ms=pace)
        self.runtime = LlmRuntime()
        self.runtime.register_adapter([self.provider], adapter)
        self.adapter = adapter

    async def call(self, **fields: Any) -> Outcome:
        self._fresh()
        options = GenerateOptions(self.provider, self.model, HI, **fields)
        finish = (await self.runtime.generate(options)).finish
        cursor = self.adapter._cursors.get(fields.get("session_id"))
        if cursor is None or cursor.used == 0:
            return Outcome(finish, None)  # refused before the adapter was asked
        verdict = finish.failure.message if isinstance(finish, Error) else "matched"
        return Outcome(finish, verdict)


_ROUTE_FIELDS: Mapping[str, Mapping[str, object]] = {
    "bedrock-converse-stream": {"region": "us-east-1"},
    "anthropic-bedrock": {"region": "us-east-1"},
    "anthropic-vertex": {"region": "us-east5", "project": "matrix-project"},
}


@asynccontextmanager
async def _target(wire: str, *, stall: bool = False) -> AsyncIterator[Target]:
    async with Capture() as server:
        server.stall = stall
        if wire == "replay":
            yield ReplayTarget(server, stall=stall)
            return
        runtime = LlmRuntime()
        if wire == "deepseek":
            adapter: Any = DeepSeekAdapter(api_key="sk-matrix", base_url=server.url, env={})
            runtime.register_adapter(["deepseek-official"], adapter)
            yield Target(runtime, "deepseek-official", "deepseek-v4-flash", server)
            return
        profile = {
            "api": wire,
            "base_url": server.url + "/v1",
            "api_key_env": "MATRIX_KEY",
            "models": [
                {"id": "m", "reasoning_efforts": {"low": "low", "medium": "medium", "high": "high"}}
            ],
            **_ROUTE_FIELDS.get(wire, {}),
        }
        adapter = ProvidersAdapter.from_config(
            {"providers": {"acme": profile}}, env={"MATRIX_KEY": "k-matrix"}
        )
        adapter.register(runtime)
        yield Target(runtime, "acme", "m", server)


def _code(finish: FinishReason) -> str | None:
    return finish.failure.code if isinstance(finish, Error) else None


async def _check_field(target: Target, wire: str, field: str, support: Support) -> None:
    base_fields: dict[str, Any] = {"tools": (TOOL,)} if field in NEEDS_TOOLS else {}
    if support is Support.BY_MODEL:
        info = await target.info()
        efforts = () if info.reasoning is None else [e.id for e in info.reasoning.efforts]
        offered = {
            "reasoning_effort": SAMPLES[field] in efforts,
            "output": info.structured_output is not None,
            "tool_choice": info.tool_choice is True,
            "parallel_tool_calls": info.parallel_tool_calls is True,
        }[field]
        support = Support.HONOURED if offered else Support.REFUSED
    got = await target.call(**base_fields, **{field: SAMPLES[field]})
    where = f"{wire}.{field}"
    if support is Support.REFUSED:
        effort = field == "reasoning_effort"
        code = "UNSUPPORTED_REASONING_EFFORT" if effort else "UNSUPPORTED_OPTION"
        assert _code(got.finish) == code, (where, got.finish)
        assert isinstance(got.finish, Error), where
        assert ("reasoning effort" if effort else field) in got.finish.failure.message, where
        assert got.sent is None, (where, "refused after I/O")
        return
    assert _code(got.finish) not in ("UNSUPPORTED_OPTION", "INVALID_OPTION"), (where, got.finish)
    assert got.sent is not None, (where, "nothing was sent")
    if support is Support.HONOURED:
        base = await target.call(**base_fields)
        assert base.sent is not None, where
        assert got.sent != base.sent, (where, "the field changed nothing that was sent")


def test_every_family_and_field_has_a_row() -> None:
    assert set(API_NAMES) | {"deepseek", "replay"} == set(OPTIONS_CONTRACT)
    for wire, row in OPTIONS_CONTRACT.items():
        assert tuple(row) == FIELDS or set(row) == set(FIELDS), wire
    assert set(SAMPLES) | set(CORE) == set(FIELDS)


@pytest.mark.parametrize("wire", sorted(OPTIONS_CONTRACT))
async def test_every_field_is_honoured_or_refused(wire: str) -> None:
    async with _target(wire) as target:
        base = await target.call()
        assert _code(base.finish) not in ("UNSUPPORTED_OPTION", "INVALID_OPTION"), base.finish
        assert base.sent is not None  # provider, model and messages make the call itself
        if wire != "replay":
            assert b"matrix hello" in base.sent[2]  # type: ignore[index]
        for field in FIELDS:
            support = OPTIONS_CONTRACT[wire][field]
            if field in CORE:
                assert support is Support.HONOURED, (wire, field)
            elif support is not Support.RUNTIME:
                await _check_field(target, wire, field, support)


@pytest.mark.parametrize("field", ["timeout_ms", "first_token_timeout_ms"])
@pytest.mark.parametrize("wire", sorted(OPTIONS_CONTRACT))
async def test_the_call_deadlines_hold_on_every_family(wire: str, field: str) -> None:
    assert OPTIONS_CONTRACT[wire][field] is Support.RUNTIME
    async with _target(wire, stall=True) as target:
        got = await asyncio.wait_for(target.call(**{field: SAMPLES[field]}), 30)  # hang guard
    assert _code(got.finish) == "TIMEOUT", (wire, got.finish)
    assert isinstance(got.finish, Error)
    assert f"({field})" in got.finish.failure.message
    assert f'model "{target.model}"' in got.finish.failure.message


async def test_a_per_call_deadline_of_zero_means_none_even_over_a_route_default() -> None:
    """0 turns the route's deadline off for this call: the stall is then ended by the idle
    budget instead (a different text), which proves the total deadline never fired."""
    async with Capture() as server:
        server.stall = True
        profile = {
            "api": "openai-completions",
            "base_url": server.url + "/v1",
            "auth": "none",
            "timeout_ms": 40,
            "stream_idle_timeout_ms": 120,
            "models": [{"id": "m"}],
        }
        runtime = LlmRuntime()
        ProvidersAdapter.from_config({"providers": {"acme": profile}}, env={}).register(runtime)
        options = GenerateOptions("acme", "m", HI, timeout_ms=0)
        finish = (await asyncio.wait_for(runtime.generate(options), 30)).finish
    assert isinstance(finish, Error) and finish.failure.code == "TIMEOUT"
    assert "idle timeout" in finish.failure.message and "timeout_ms" not in finish.failure.message


@pytest.mark.parametrize("value", [-1, 1.5, "10", True])
async def test_a_malformed_deadline_is_invalid_option(value: object) -> None:
    async with _target("deepseek") as target:
        got = await target.call(timeout_ms=value)
    assert _code(got.finish) == "INVALID_OPTION" and got.sent is None
    assert isinstance(got.finish, Error) and "timeout_ms" in got.finish.failure.message
