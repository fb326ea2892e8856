"""Malformed requests are refused at the runtime edge, the same way on every adapter.

Each adapter (DeepSeek; the providers adapter on each of its three protocols; replay) is served
by a real aiohttp server on 127.0.0.1. A malformed request ends in exactly one
`Finish(Error(INVALID_OPTION))` naming the field, and the server receives nothing; a well-formed
request on the same runtime afterwards does reach it (so the refusal, not the setup, kept it away).
"""

from __future__ import annotations

import math
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgspec
import pytest

TESTS = Path(__file__).resolve().parents[1]
for _helpers in ("providers", "deepseek"):
    if str(TESTS / _helpers) not in sys.path:
        sys.path.insert(0, str(TESTS / _helpers))

from deepseek_helpers import HELLO, Server, make_adapter, sse_response, start_server  # noqa: E402
from providers_fixtures import TEXT_EVENTS, MockServer, Reply  # noqa: E402

from modelwire import LlmRuntime  # noqa: E402
from modelwire.adapters.providers import ProvidersAdapter  # noqa: E402
from modelwire.adapters.replay import ChunksEntry, ReplayAdapter, ReplayScript  # noqa: E402
from modelwire.adapters.replay.script import make_call  # noqa: E402
from modelwire.vocab import (  # noqa: E402
    BlockEnd,
    BlockStart,
    Error,
    Finish,
    GenerateOptions,
    Stop,
    StreamChunk,
    TextBlock,
    TextDelta,
    ToolResultBlock,
    system_message,
    tool_result_message,
    user_message,
)
from modelwire.wire.http import close_sessions  # noqa: E402

REPLY: tuple[StreamChunk, ...] = (
    BlockStart(0, "text"),
    TextDelta(0, "ok"),
    BlockEnd(0, TextBlock("ok")),
    Finish(Stop()),
)


@pytest.fixture(autouse=True)
async def _close_pooled_sessions() -> AsyncIterator[None]:
    yield
    await close_sessions()


@dataclass
class Target:
    """One adapter on a runtime, the route and model it serves, and how many requests it got."""

    runtime: LlmRuntime
    provider: str
    model: str
    received: Callable[[], int]


@asynccontextmanager
async def _deepseek() -> AsyncIterator[Target]:
    server = Server()
    runner = await start_server(server)
    try:
        server.default = sse_response(HELLO)
        runtime = LlmRuntime()
        runtime.register_adapter(["deepseek-official"], make_adapter(server))
        yield Target(
            runtime, "deepseek-official", "deepseek-v4-flash", lambda: len(server.requests)
        )
    finally:
        await runner.cleanup()


def _providers(api: str) -> Callable[[], Any]:
    @asynccontextmanager
    async def build() -> AsyncIterator[Target]:
        async with MockServer([Reply(reads=TEXT_EVENTS)]) as server:
            profile = {
                "api": api,
                "base_url": server.url + "/v1",
                "api_key_env": "ACME_KEY",
                "models": [{"id": "m"}],
            }
            adapter = ProvidersAdapter.from_config(
                {"providers": {"acme": profile}}, env={"ACME_KEY": "k"}
            )
            runtime = LlmRuntime()
            adapter.register(runtime)
            yield Target(runtime, "acme", "m", lambda: len(server.paths))

    return build


@asynccontextmanager
async def _replay() -> AsyncIterator[Target]:
    # The replay adapter does no HTTP; a server still stands by to show nothing is sent, and the
    # script's cursor is the "request" count: a refused call must not consume the recording.
    async with MockServer([Reply(reads=TEXT_EVENTS)]) as server:
        script = ReplayScript("rec", 0, "test", (make_call(ChunksEntry(REPLY), None, "call 1"),))
        adapter = ReplayAdapter([script])
        runtime = LlmRuntime()
        runtime.register_adapter(["acme"], adapter)

        def received() -> int:
            calls = adapter._cursors.get(None)
            return len(server.paths) + (0 if calls is None else calls.used)

        yield Target(runtime, "acme", "acme-1", received)


ADAPTERS = [
    pytest.param(_deepseek, id="deepseek"),
    pytest.param(_providers("openai-completions"), id="openai-completions"),
    pytest.param(_providers("openai-responses"), id="openai-responses"),
    pytest.param(_providers("anthropic-messages"), id="anthropic-messages"),
    pytest.param(_replay, id="replay"),
]


def _request(target: Target, **fields: Any) -> GenerateOptions:
    fields.setdefault("messages", (user_message("hi"),))
    return GenerateOptions(provider=target.provider, model=target.model, **fields)


async def _refused(build: Callable[[], Any], field: str, **fields: Any) -> None:
    async with AsyncExitStack() as stack:
        target: Target = await stack.enter_async_context(build())
        chunks = [c async for c in target.runtime.stream(_request(target, **fields))]
        assert len(chunks) == 1, chunks
        (finish,) = chunks
        assert isinstance(finish, Finish) and isinstance(finish.reason, Error)
        failure = finish.reason.failure
        assert failure.code == "INVALID_OPTION", failure
        assert field in failure.message, (field, failure.message)
        assert target.received() == 0  # refused before any adapter work or I/O
        result = await target.runtime.generate(_request(target, **fields))
        assert isinstance(result.finish, Error) and result.finish.failure.code == "INVALID_OPTION"
        assert target.received() == 0
        async for _ in target.runtime.stream(_request(target)):  # the control: this one is sent
            pass
        assert target.received() == 1


@pytest.mark.parametrize("build", ADAPTERS)
@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf], ids=["nan", "inf", "-inf"])
async def test_nan_temperature_is_invalid_option_on_every_adapter(
    build: Callable[[], Any], value: float
) -> None:
    await _refused(build, "temperature must be a finite number", temperature=value)


@pytest.mark.parametrize("build", ADAPTERS)
@pytest.mark.parametrize("value", ["5", -1, 0, 10**12, 2.0, True], ids=repr)
async def test_bad_max_tokens_is_invalid_option_on_every_adapter(
    build: Callable[[], Any], value: object
) -> None:
    await _refused(build, "max_tokens must be an integer in 1..", max_tokens=value)


@pytest.mark.parametrize("build", ADAPTERS)
async def test_lone_surrogate_in_a_message_is_invalid_option_on_every_adapter(
    build: Callable[[], Any],
) -> None:
    messages = (user_message("fine"), user_message("ok"), user_message("bad \ud800 text"))
    await _refused(
        build, "messages[2].content[0].text contains a lone surrogate", messages=messages
    )


@pytest.mark.parametrize("build", ADAPTERS)
async def test_lone_surrogate_in_the_system_prompt_is_invalid_option_on_every_adapter(
    build: Callable[[], Any],
) -> None:
    await _refused(build, "system contains a lone surrogate", system="be \udfff nice")


@pytest.mark.parametrize("build", ADAPTERS)
async def test_lone_surrogate_in_a_nested_tool_result_names_the_path(
    build: Callable[[], Any],
) -> None:
    inner = ToolResultBlock("c1", (TextBlock("deep \udc80"),))
    result = msgspec.structs.replace(tool_result_message("c1", "x"), content=(inner,))
    messages = (system_message("sys"), result)
    await _refused(build, "messages[1].content[0].content[0].text", messages=messages)


@pytest.mark.parametrize("build", ADAPTERS)
async def test_missing_messages_are_invalid_option_on_every_adapter(
    build: Callable[[], Any],
) -> None:
    await _refused(build, "messages must be a sequence of messages", messages=None)
