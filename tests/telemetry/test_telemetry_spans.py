"""OpenTelemetry GenAI spans and client metrics for model calls (the SDK's in-memory exporter and
metric reader), over the DeepSeek adapter and the providers adapter talking to a real server on
127.0.0.1 — recorded DeepSeek and Anthropic streams included.

Rules pinned: one CLIENT span per model call (`generate()` and `stream()` alike, never two for one
call) named `chat <model>` with every GenAI attribute, `gen_ai.response.id` and
`gen_ai.response.model` included (the stream's own, on both adapters); a failed call (429)
carries `error.type` = the failure code and status ERROR and names no response; a retried step
gives one span per attempt, numbered, only the recovered one naming its response; token
usage and duration histograms carry the route and model; message content only when opted in;
no credential on any span; a consumer closing the stream early is a failure only before the
finish; disposing (or instrumenting twice) behaves; `import modelwire` and
`import modelwire.telemetry` never import OpenTelemetry, and without it `instrument` is a no-op.
"""

from __future__ import annotations

import subprocess
import sys

import pytest
from opentelemetry.trace import SpanKind, StatusCode
from otel_helpers import (
    Otel,
    Server,
    assert_no_secret,
    attrs,
    deepseek_runtime,
    fixture,
    parent_of,
    providers_runtime,
    span_id,
)

import modelwire as mw
from modelwire.agent import Agent
from modelwire.retry import RetryPlugin
from modelwire.session import SessionLog
from modelwire.telemetry import instrument

DS_CACHED = "deepseek-chat/crush-ds4-pro-download-final-cached.sse"
"""Recorded: 9,856 prompt tokens (9,127 cache reads), 14 completion tokens, finish `stop`; every
payload names `id` chatcmpl-df8a7ac50e4fbef490779d65 and `model` deepseek-v4-pro-0813."""
DS_RESPONSE = {
    "gen_ai.response.id": "chatcmpl-df8a7ac50e4fbef490779d65",
    "gen_ai.response.model": "deepseek-v4-pro-0813",
}
RESPONSE_KEYS = ("gen_ai.response.id", "gen_ai.response.model")
ANTH_CACHE = "anthropic-messages/anth-code-exec-prompt-cache.sse"
"""Recorded: 6 uncached + 6,289 cache-read + 3,337 cache-write prompt tokens, 198 output."""


def _ask(
    route: str = "deepseek", model: str = "deepseek-v4-flash", **extra: object
) -> mw.GenerateOptions:
    return mw.GenerateOptions(
        route,
        model,
        (mw.user_message("hi"),),
        temperature=0.5,
        max_tokens=64,
        session_id="s-42",
        **extra,  # type: ignore[arg-type]
    )


async def _stream(rt: mw.LlmRuntime, options: mw.GenerateOptions) -> list[mw.StreamChunk]:
    async with rt.stream(options) as stream:
        return [chunk async for chunk in stream]


async def test_a_generate_call_is_one_client_span_with_every_genai_attribute(otel: Otel) -> None:
    async with Server([fixture(DS_CACHED)]) as server:
        rt = deepseek_runtime(server.url)
        instrument(rt, **otel.kwargs())
        result = await rt.generate(_ask(stop=("END",)))
    assert result.finish == mw.Stop()
    (span,) = otel.spans()  # the generate() call's own stream is not a second span
    assert span.name == "chat deepseek-v4-flash"
    assert span.kind is SpanKind.CLIENT
    assert span.parent is None
    assert attrs(span) == {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "deepseek",
        "gen_ai.request.model": "deepseek-v4-flash",
        "gen_ai.request.temperature": 0.5,
        "gen_ai.request.max_tokens": 64,
        "gen_ai.request.stop_sequences": ("END",),
        "gen_ai.conversation.id": "s-42",
        "gen_ai.response.finish_reasons": ("stop",),
        "gen_ai.usage.input_tokens": 9856,  # 729 uncached + 9,127 cache reads
        "gen_ai.usage.output_tokens": 14,
        "gen_ai.usage.cache_read.input_tokens": 9127,
        **DS_RESPONSE,  # the recorded stream's own id and served model
    }  # content absent by default
    assert span.status.status_code is StatusCode.UNSET
    base = {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "deepseek",
        "gen_ai.request.model": "deepseek-v4-flash",
        "gen_ai.response.model": "deepseek-v4-pro-0813",
    }
    assert sorted(otel.points("gen_ai.client.token.usage"), key=str) == sorted(
        [
            ({**base, "gen_ai.token.type": "input"}, 9856),
            ({**base, "gen_ai.token.type": "output"}, 14),
        ],
        key=str,
    )
    ((duration_attrs, seconds),) = otel.points("gen_ai.client.operation.duration")
    assert duration_attrs == base and seconds >= 0


async def test_a_streamed_call_carries_the_same_attributes_as_a_generated_one(otel: Otel) -> None:
    async with Server([fixture(DS_CACHED), fixture(DS_CACHED)]) as server:
        rt = deepseek_runtime(server.url)
        instrument(rt, **otel.kwargs())
        await rt.generate(_ask(stop=("END",)))
        chunks = await _stream(rt, _ask(stop=("END",)))
    assert isinstance(chunks[-1], mw.Finish)
    generated, streamed = otel.spans()
    assert attrs(streamed) == attrs(generated)
    assert streamed.kind is SpanKind.CLIENT and streamed.name == generated.name
    tokens = otel.points("gen_ai.client.token.usage")
    assert sorted(value for _, value in tokens) == [28, 19712]  # two calls, one point per type


@pytest.mark.parametrize("adapter", ["deepseek", "providers"])
async def test_a_429_is_a_span_with_error_type_the_failure_code(otel: Otel, adapter: str) -> None:
    async with Server([429, 429]) as server:
        if adapter == "deepseek":
            rt, options = deepseek_runtime(server.url), _ask()
        else:
            rt, options = providers_runtime(server.url), _ask("gw", "m")
        instrument(rt, **otel.kwargs())
        result = await rt.generate(options)
        chunks = await _stream(rt, options)
    assert isinstance(result.finish, mw.Error) and isinstance(chunks[-1], mw.Finish)
    for span in otel.spans():
        a = attrs(span)
        assert a["error.type"] == "RATE_LIMIT"
        assert a["gen_ai.response.finish_reasons"] == ("error",)
        assert a["gen_ai.provider.name"] == options.provider
        assert a["gen_ai.request.model"] == options.model
        assert "gen_ai.usage.input_tokens" not in a
        assert not [key for key in RESPONSE_KEYS if key in a]  # no response, nothing to name
        assert span.status.status_code is StatusCode.ERROR
        assert span.status.description == "RATE_LIMIT"  # the code, never the provider's text
    assert len(otel.spans()) == 2
    assert otel.points("gen_ai.client.token.usage") == []  # nothing billed, nothing recorded
    ((duration_attrs, _),) = otel.points("gen_ai.client.operation.duration")
    assert duration_attrs["error.type"] == "RATE_LIMIT"
    assert_no_secret(otel.spans())


@pytest.mark.parametrize("adapter", ["deepseek", "providers"])
async def test_a_retried_step_gives_one_span_per_attempt_numbered(
    otel: Otel, log: SessionLog, adapter: str
) -> None:
    slept: list[float] = []

    async def sleep(seconds: float) -> None:
        slept.append(seconds)

    async with Server([429, "recovered"]) as server:
        if adapter == "deepseek":
            rt, route, model = deepseek_runtime(server.url), "deepseek", "deepseek-v4-flash"
        else:
            rt, route, model = providers_runtime(server.url), "gw", "m"
        agent = Agent(rt, log, route, model, plugins=[RetryPlugin(sleep=sleep)])
        instrument(agent, **otel.kwargs())
        result = await agent.run_turn("s1", "hi")
    assert result.reason.kind == "completed" and slept
    (turn,) = otel.named("invoke_agent")
    first, second = otel.named("chat ")
    assert attrs(first)["error.type"] == "RATE_LIMIT"
    assert first.status.status_code is StatusCode.ERROR
    assert not [key for key in RESPONSE_KEYS if key in attrs(first)]
    assert "error.type" not in attrs(second)
    assert attrs(second)["gen_ai.response.id"] == "chatcmpl-1"  # the recovered stream's
    assert attrs(second)["gen_ai.response.model"] == "served-model"
    for span, attempt in ((first, 1), (second, 2)):
        a = attrs(span)
        assert a["gen_ai.conversation.id"] == "s1"
        assert (a["modelwire.turn"], a["modelwire.step"], a["modelwire.attempt"]) == (1, 1, attempt)
        assert a["gen_ai.provider.name"] == route and a["gen_ai.request.model"] == model
        assert parent_of(span) == span_id(turn)
    assert attrs(second)["gen_ai.usage.input_tokens"] == 12
    assert attrs(second)["gen_ai.response.finish_reasons"] == ("stop",)
    assert attrs(turn)["gen_ai.usage.input_tokens"] == 12  # the failed attempt billed nothing


@pytest.mark.parametrize("adapter", ["deepseek", "providers"])
async def test_each_adapter_names_the_response_id_and_model(otel: Otel, adapter: str) -> None:
    async with Server(["hi there", "hi there"]) as server:
        if adapter == "deepseek":
            rt, options = deepseek_runtime(server.url), _ask()
        else:
            rt, options = providers_runtime(server.url), _ask("gw", "m")
        instrument(rt, **otel.kwargs())
        await rt.generate(options)
        await _stream(rt, options)
    assert len(otel.spans()) == 2
    for span in otel.spans():  # generate() and stream() alike
        a = attrs(span)
        assert a["gen_ai.response.id"] == "chatcmpl-1"
        assert a["gen_ai.response.model"] == "served-model"
        assert a["gen_ai.usage.input_tokens"] == 12
        assert a["gen_ai.usage.output_tokens"] == 3
        assert a["gen_ai.usage.cache_read.input_tokens"] == 4
    for point, _ in otel.points("gen_ai.client.token.usage"):
        assert point["gen_ai.response.model"] == "served-model"
        assert point["gen_ai.provider.name"] == options.provider
        assert point["gen_ai.request.model"] == options.model


async def test_an_anthropic_cache_stream_records_cache_reads_and_writes(otel: Otel) -> None:
    async with Server([fixture(ANTH_CACHE)]) as server:
        rt = providers_runtime(server.url, "anthropic-messages", "claude-test")
        instrument(rt, **otel.kwargs())
        result = await rt.generate(_ask("gw", "claude-test"))
    assert result.finish == mw.Stop()
    (span,) = otel.spans()
    a = attrs(span)
    assert a["gen_ai.usage.input_tokens"] == 6 + 6289 + 3337
    assert a["gen_ai.usage.cache_read.input_tokens"] == 6289
    assert a["gen_ai.usage.cache_creation.input_tokens"] == 3337
    assert a["gen_ai.usage.output_tokens"] == 198
    assert a["gen_ai.response.id"] == "msg_011CdYfpjpVtBoXyXCQD1tQP"
    assert a["gen_ai.response.model"] == "claude-sonnet-5"
    assert a["gen_ai.response.finish_reasons"] == ("stop",)
    inputs = [
        v for p, v in otel.points("gen_ai.client.token.usage") if p["gen_ai.token.type"] == "input"
    ]
    assert inputs == [9632]


CONTENT = ("gen_ai.input.messages", "gen_ai.system_instructions", "gen_ai.output.messages")


@pytest.mark.parametrize("capture", [False, True])
async def test_content_is_recorded_only_when_opted_in(otel: Otel, capture: bool) -> None:
    async with Server(["the answer", "the answer"]) as server:
        rt = providers_runtime(server.url)
        instrument(rt, capture_content=capture, **otel.kwargs())
        await rt.generate(_ask("gw", "m", system="be brief"))
        await _stream(rt, _ask("gw", "m", system="be brief"))
    for span in otel.spans():
        a = attrs(span)
        if not capture:
            assert not [name for name in CONTENT if name in a]
            continue
        assert a["gen_ai.output.messages"] == "the answer"
        assert a["gen_ai.system_instructions"] == "be brief"
        assert '"hi"' in a["gen_ai.input.messages"]
    assert_no_secret(otel.spans())


async def test_a_consumer_closing_early_is_aborted_only_before_the_finish(otel: Otel) -> None:
    async with Server(["done", "cut"]) as server:
        rt = deepseek_runtime(server.url)
        instrument(rt, **otel.kwargs())
        blocks = [b async for b in rt.stream_blocks(_ask())]  # stops at the finish
        async with rt.stream(_ask()) as stream:
            async for _ in stream:
                break  # the first chunk only
    assert blocks == [mw.TextBlock("done")]
    finished, cut = otel.spans()
    assert "error.type" not in attrs(finished)
    assert attrs(cut)["error.type"] == "ABORTED"
    assert cut.status.status_code is StatusCode.ERROR


async def test_disposing_the_instrumentation_stops_spans_and_metrics(otel: Otel) -> None:
    async with Server(["one", "two", "three"]) as server:
        rt = deepseek_runtime(server.url)
        dispose = instrument(rt, **otel.kwargs())
        await rt.generate(_ask())
        dispose()
        dispose()  # idempotent
        await rt.generate(_ask())
        await _stream(rt, _ask())
    assert len(otel.spans()) == 1
    assert len(otel.points("gen_ai.client.operation.duration")) == 1


async def test_instrumenting_a_runtime_twice_does_not_double_its_spans(otel: Otel) -> None:
    async with Server(["one", "two"]) as server:
        rt = deepseek_runtime(server.url)
        instrument(rt, **otel.kwargs())
        second = instrument(rt, **otel.kwargs())
        await rt.generate(_ask())
        second()  # the no-op disposer of the second call leaves the first in place
        await rt.generate(_ask())
    assert len(otel.spans()) == 2


def test_instrument_refuses_what_is_neither_a_runtime_nor_an_agent() -> None:
    with pytest.raises(mw.HarnessError) as caught:
        instrument(object())  # type: ignore[arg-type]
    assert caught.value.code == "INVALID_ARGS" and "object" in caught.value.message


def _run(probe: str) -> str:
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    return out.stdout.strip()


def test_import_modelwire_does_not_import_opentelemetry() -> None:
    probe = (
        "import sys, modelwire, modelwire.telemetry, modelwire.agent\n"
        "from modelwire.telemetry import instrument, instrument_agent\n"
        "print(sorted(m for m in sys.modules if m.startswith('opentelemetry')))"
    )
    assert _run(probe) == "[]"


def test_without_opentelemetry_instrument_is_a_no_op() -> None:
    probe = (
        "import sys\n"
        "class Block:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name.split('.')[0] == 'opentelemetry':\n"
        "            raise ImportError('blocked: ' + name)\n"
        "sys.meta_path.insert(0, Block())\n"
        "import modelwire as mw\n"
        "from modelwire.agent import Agent\n"
        "from modelwire.session import MemoryLog\n"
        "from modelwire.telemetry import instrument, instrument_agent\n"
        "rt = mw.LlmRuntime()\n"
        "agent = Agent(rt, MemoryLog(), 'p', 'm')\n"
        "for dispose in (instrument(rt), instrument(agent), instrument_agent(agent)):\n"
        "    dispose()\n"
        "print(len(rt._stream_chain.items), len(agent.hooks.on_turn), len(agent.hooks.on_tool))"
    )
    assert _run(probe) == "0 0 0"
