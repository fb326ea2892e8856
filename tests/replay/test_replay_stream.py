"""G.12 cases 30–57: replaying through the real `LlmRuntime` (adapter and catch-all modes)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from replay_helpers import (
    MODEL,
    ROUTE,
    collect,
    error_chunks,
    header,
    options,
    record,
    text_chunks,
    turn,
    write_json,
)

from modelwire.adapters.replay import (
    ChunksEntry,
    HangEntry,
    ReplayAdapter,
    ReplayEntry,
    ReplayScript,
    ThrowEntry,
)
from modelwire.adapters.replay.placeholders import request_corpus
from modelwire.adapters.replay.script import make_call
from modelwire.errors import ErrorCode, HarnessError, LlmError
from modelwire.runtime import LlmRuntime
from modelwire.runtime.adapter import LlmAdapter
from modelwire.vocab import (
    BlockEnd,
    BlockStart,
    Finish,
    GenerateOptions,
    LlmFailure,
    Message,
    Stop,
    StreamChunk,
    TextBlock,
    TextDelta,
    ToolResultBlock,
    ToolSource,
)


def scripted(*entries: ReplayEntry, session_id: str = "", **kw: object) -> ReplayAdapter:
    calls = tuple(make_call(e, None, f"entry {i}") for i, e in enumerate(entries))
    return ReplayAdapter([ReplayScript(session_id, 0, "test", calls)], **kw)  # type: ignore[arg-type]


def catch_all(adapter: ReplayAdapter) -> LlmRuntime:
    runtime = LlmRuntime()
    runtime.use(adapter.middleware)
    return runtime


def registered(adapter: ReplayAdapter) -> LlmRuntime:
    runtime = LlmRuntime()
    runtime.register_adapter([ROUTE], adapter)
    return runtime


HELLO = ChunksEntry(tuple(text_chunks("hello")))


class Echo(LlmAdapter):
    """A stand-in real adapter (no HTTP): answers one fixed text."""

    async def stream(self, options: GenerateOptions) -> AsyncIterator[StreamChunk]:
        yield TextDelta(0, "real")
        yield Finish(Stop())


GUARD_S = 60.0
"""Only a regression that ignores cancellation reaches it (no test measures elapsed time)."""


async def _texts(runtime: LlmRuntime, opts: GenerateOptions) -> list[str]:
    chunks = await collect(runtime.stream(opts))
    return [c.text for c in chunks if isinstance(c, TextDelta)]


# ---- catch-all mode and placeholders (30–38) --------------------------------------------------


async def test_replay_30_catch_all_replays_for_an_unregistered_provider() -> None:
    runtime = catch_all(scripted(HELLO))
    chunks = await collect(runtime.stream(options(provider="nowhere")))
    assert chunks == list(HELLO.chunks)


def _templated(text: str) -> ChunksEntry:
    return ChunksEntry(
        (BlockStart(0, "text"), TextDelta(0, text), BlockEnd(0, TextBlock(text)), Finish(Stop()))
    )


async def test_replay_31_from_request_uses_group_1_of_the_last_match_in_every_string() -> None:
    runtime = catch_all(scripted(_templated(r"id={{fromRequest:order (\d+)}}!")))
    chunks = await collect(runtime.stream(options("order 12, then order 34")))
    assert chunks[1] == TextDelta(0, "id=34!")
    assert chunks[2] == BlockEnd(0, TextBlock("id=34!"))


async def test_replay_32_without_a_group_the_whole_match_substitutes() -> None:
    runtime = catch_all(scripted(_templated(r"{{fromRequest:ord\w+ \d}}")))
    assert await _texts(runtime, options("order 1 order 2")) == ["order 2"]


async def test_replay_33_a_trailing_quantifier_stays_in_the_pattern() -> None:
    runtime = catch_all(scripted(_templated(r"{{fromRequest:\d{4}}}")))
    assert await _texts(runtime, options("pin 2024 (12)")) == ["2024"]


async def test_replay_34_no_match_raises_matched_nothing_on_iteration() -> None:
    runtime = catch_all(scripted(_templated(r"{{fromRequest:zzz}}")))
    stream = runtime.stream(options("abc"))  # the call itself does not raise
    with pytest.raises(LlmError) as caught:
        await collect(stream)
    assert caught.value.code == ErrorCode.REPLAY_MISMATCH
    assert "matched nothing" in caught.value.message


async def test_replay_35_invalid_pattern_raises_invalid_pattern() -> None:
    runtime = catch_all(scripted(_templated("{{fromRequest:(}}")))
    with pytest.raises(HarnessError, match="invalid pattern"):
        await collect(runtime.stream(options()))


async def test_replay_36_unterminated_placeholder_raises_unterminated() -> None:
    runtime = catch_all(scripted(_templated("{{fromRequest:abc")))
    with pytest.raises(HarnessError, match="unterminated"):
        await collect(runtime.stream(options()))


async def test_replay_37_an_entry_without_placeholders_is_replayed_as_the_same_objects() -> None:
    adapter = scripted(HELLO)
    assert adapter.scripts[0].calls[0].templated is False
    chunks = await collect(catch_all(adapter).stream(options()))
    assert all(got is want for got, want in zip(chunks, HELLO.chunks, strict=True))


def test_replay_38_non_string_leaves_are_skipped_in_the_corpus() -> None:
    result = ToolResultBlock("c1", (TextBlock("r"),), True)
    message = Message("m1", "user", (result,), ToolSource("c1"))
    corpus = request_corpus([message])
    assert corpus.split("\n") == ["m1", "user", "tool-result", "c1", "text", "r", "tool", "c1"]


# ---- provider catalog mode (39–40) ------------------------------------------------------------

CATALOG = {
    "acme": {
        "name": "Acme",
        "models": [
            {
                "id": "m1",
                "name": "Model One",
                "context_window": 8192,
                "input_modalities": ["text", "image"],
                "default_max_tokens": 512,
                "reasoning_efforts": ["low", "high"],
                "default_reasoning_effort": "low",
            }
        ],
        "retry_policy": {"mode": "always"},
    },
    "beta": {"models": [{"id": "b1"}]},
}


async def test_replay_39_catalog_mode_publishes_models_policies_and_streams() -> None:
    adapter = scripted(HELLO, providers=CATALOG)
    runtime = LlmRuntime()
    registration = adapter.register(runtime)
    assert [(p.id, p.name) for p in runtime.list_providers()] == [
        ("acme", "Acme"),
        ("beta", "beta"),
    ]
    (model,) = await runtime.list_models("acme")
    assert (model.id, model.name, model.input_modalities) == ("m1", "Model One", ("text", "image"))
    info = await runtime.resolve_model_info("acme", "m1")
    assert info.context is not None and info.context.context_window == 8192
    assert info.default_max_tokens == 512
    assert info.reasoning is not None and [e.id for e in info.reasoning.efforts] == ["low", "high"]
    assert info.reasoning.default_effort == "low"
    assert runtime.provider_retry_policy("acme").mode == "always"
    assert runtime.provider_retry_policy("beta").mode == "normal"
    assert await _texts(runtime, options(provider="acme", model="m1")) == ["hello"]
    registration()
    with pytest.raises(LlmError) as caught:
        runtime.provider_retry_policy("acme")
    assert caught.value.code == ErrorCode.NO_ADAPTER


def test_replay_40_invalid_provider_retry_policy_fails_with_the_replay_path() -> None:
    with pytest.raises(HarnessError) as caught:
        scripted(HELLO, providers={"acme": {"retry_policy": {"mode": "sometimes"}}})
    assert caught.value.code == ErrorCode.INVALID_CONFIG
    assert caught.value.message.startswith('replay: provider "acme" retry_policy.mode')


# ---- entries, cursors, cancellation (41–53) ---------------------------------------------------


async def test_replay_41_the_nth_call_gets_the_nth_entry() -> None:
    entries = [ChunksEntry(tuple(text_chunks(t))) for t in ("a", "b", "c")]
    runtime = registered(scripted(*entries))
    assert [await _texts(runtime, options()) for _ in range(3)] == [["a"], ["b"], ["c"]]


async def test_replay_42_throw_entry_replays_its_prefix_then_raises_llm_error() -> None:
    prefix = (BlockStart(0, "text"), TextDelta(0, "par"))
    runtime = catch_all(scripted(ThrowEntry(prefix, LlmFailure("reset", "TRANSPORT", status=502))))
    seen: list[StreamChunk] = []
    with pytest.raises(LlmError) as caught:
        async for chunk in runtime.stream(options()):
            seen.append(chunk)
    assert seen == list(prefix)
    assert (caught.value.code, caught.value.status, caught.value.message) == (
        "TRANSPORT",
        502,
        "reset",
    )


async def test_replay_42_throw_entry_in_adapter_mode_is_an_in_band_error_finish() -> None:
    runtime = registered(scripted(ThrowEntry((), LlmFailure("reset", "TRANSPORT"))))
    (finish,) = await collect(runtime.stream(options()))
    assert isinstance(finish, Finish) and finish.reason.kind == "error"
    assert finish.reason.failure == LlmFailure("reset", "TRANSPORT")


async def _consume_into(runtime: LlmRuntime, seen: list[StreamChunk]) -> None:
    async for chunk in runtime.stream(options()):
        seen.append(chunk)


async def test_replay_43_hang_yields_two_chunks_then_ends_when_cancelled() -> None:
    runtime = registered(scripted(HangEntry()))
    seen: list[StreamChunk] = []
    task = asyncio.create_task(_consume_into(runtime, seen))
    while len(seen) < 2:
        await asyncio.sleep(0.005)
    await asyncio.sleep(0.02)
    assert not task.done()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert seen == [BlockStart(0, "text"), TextDelta(0, "partial")]


async def test_replay_44_a_call_past_the_end_is_replay_exhausted() -> None:
    runtime = registered(scripted(HELLO))
    await collect(runtime.stream(options(session_id="s9")))
    (finish,) = await collect(runtime.stream(options(session_id="s9")))
    assert isinstance(finish, Finish) and finish.reason.kind == "error"
    failure = finish.reason.failure
    assert failure.code == ErrorCode.REPLAY_EXHAUSTED
    assert "session 's9' requested model call #2" in failure.message
    assert "has only 1" in failure.message


async def _cancel_self_then_consume(runtime: LlmRuntime, seen: list[StreamChunk]) -> None:
    task = asyncio.current_task()
    assert task is not None
    task.cancel()  # pending cancellation: the stream must notice it before yielding
    async for chunk in runtime.stream(options()):
        seen.append(chunk)


async def test_replay_45_a_cancelled_consumer_gets_no_chunk() -> None:
    seen: list[StreamChunk] = []
    with pytest.raises(asyncio.CancelledError):
        await asyncio.create_task(_cancel_self_then_consume(registered(scripted(HELLO)), seen))
    assert seen == []


async def test_replay_46_removing_the_catch_all_lets_calls_reach_the_real_adapter() -> None:
    runtime = LlmRuntime()
    runtime.register_adapter([ROUTE], Echo())
    remove = runtime.use(scripted(HELLO).middleware)
    assert await _texts(runtime, options()) == ["hello"]
    remove()
    assert await _texts(runtime, options()) == ["real"]


async def test_replay_47_a_sidecar_with_an_unknown_kind_fails_at_load(tmp_path: Path) -> None:
    path = await record(turn("hi", [text_chunks("ok")]), tmp_path / "a.jsonl")
    sidecar = write_json(
        Path(f"{path}.override.json"), {"patches": [{"at": 0, "entry": {"kind": "nap"}}]}
    )
    with pytest.raises(HarnessError) as caught:
        ReplayAdapter.from_file(path)
    assert caught.value.code == ErrorCode.INVALID_REPLAY_FILE
    assert f"{sidecar}: patches[0].entry.kind has unknown kind" in caught.value.message


async def test_replay_48_hang_ready_file_exists_while_waiting(tmp_path: Path) -> None:
    ready = tmp_path / "ready"
    runtime = registered(scripted(HangEntry(str(ready))))
    seen: list[StreamChunk] = []
    task = asyncio.create_task(_consume_into(runtime, seen))
    for _ in range(200):
        if ready.exists():
            break
        await asyncio.sleep(0.005)
    assert ready.exists() and len(seen) == 2 and not task.done()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):  # cancelled, not completed after the pace/hang
        await asyncio.wait_for(task, GUARD_S)


async def test_replay_49_throw_entry_with_a_cancelled_consumer_is_cancelled_not_its_error() -> None:
    runtime = registered(scripted(ThrowEntry((), LlmFailure("reset", "TRANSPORT"))))
    with pytest.raises(asyncio.CancelledError):
        await asyncio.create_task(_cancel_self_then_consume(runtime, []))


async def test_replay_50_hang_with_a_cancelled_consumer_yields_two_chunks_then_stops() -> None:
    seen: list[StreamChunk] = []
    runtime = registered(scripted(HangEntry()))
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(
            asyncio.create_task(_cancel_self_then_consume(runtime, seen)), timeout=1.0
        )
    assert seen == [BlockStart(0, "text"), TextDelta(0, "partial")]


@pytest.mark.parametrize("pace", [-1, 1.5], ids=["negative", "fractional"])
def test_replay_51_pace_ms_must_be_a_non_negative_integer(pace: object) -> None:
    with pytest.raises(HarnessError) as caught:
        scripted(HELLO, pace_ms=pace)
    assert caught.value.code == ErrorCode.INVALID_CONFIG and "pace_ms" in caught.value.message


class _Sleeps:
    """A recording sleep: the pace waits the adapter asks for, without waiting."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.delays.append(seconds)
        await asyncio.sleep(0)


async def test_replay_52_pace_ms_spaces_chunk_delivery() -> None:
    sleeps = _Sleeps()
    runtime = registered(scripted(HELLO, pace_ms=10, sleep=sleeps))
    chunks = await collect(runtime.stream(options()))
    assert len(sleeps.delays) >= len(chunks) - 1 and set(sleeps.delays) == {0.010}


async def test_replay_53_cancelling_a_long_pace_wait_is_prompt() -> None:
    runtime = registered(scripted(HELLO, pace_ms=10_000))
    task = asyncio.create_task(_consume_into(runtime, []))
    await asyncio.sleep(0.02)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):  # cancelled, not completed after the pace/hang
        await asyncio.wait_for(task, GUARD_S)


# ---- consumption report (54–57) ---------------------------------------------------------------


async def test_replay_54_assert_consumed_reports_an_underrun_until_the_last_call() -> None:
    adapter = scripted(HELLO, HELLO)
    runtime = registered(adapter)
    await collect(runtime.stream(options(session_id=None)))
    with pytest.raises(HarnessError) as caught:
        adapter.assert_consumed()
    assert caught.value.code == ErrorCode.REPLAY_UNCONSUMED
    assert "the anonymous session consumed 1/2 recorded call(s)" in caught.value.message
    await collect(runtime.stream(options(session_id=None)))
    adapter.assert_consumed()


async def test_replay_55_a_throw_entrys_prefix_is_paced_too() -> None:
    prefix = tuple(text_chunks("x")[:3])
    sleeps = _Sleeps()
    entry = ThrowEntry(prefix, LlmFailure("m", "SERVER"))
    runtime = registered(scripted(entry, pace_ms=10, sleep=sleeps))
    chunks = await collect(runtime.stream(options()))
    assert sleeps.delays[:3] == [0.010] * 3
    assert chunks[:3] == list(prefix) and chunks[3].type == "finish"


async def test_replay_56_assert_consumed_names_an_identified_session() -> None:
    adapter = scripted(HELLO, HELLO)
    await collect(registered(adapter).stream(options(session_id="sess-7")))
    with pytest.raises(HarnessError, match=r"session 'sess-7' consumed 1/2 recorded call\(s\)"):
        adapter.assert_consumed()


async def test_replay_57_assert_consumed_reports_a_child_script_never_bound() -> None:
    child = ReplayScript("kid", 1, "child", (make_call(HELLO, None, "c"),))
    parent = ReplayScript("", 0, "parent", (make_call(HELLO, None, "p"),))
    adapter = ReplayAdapter([parent, child])
    await collect(registered(adapter).stream(options()))
    with pytest.raises(HarnessError, match=r"1 recorded script\(s\) never bound"):
        adapter.assert_consumed()


async def test_replay_error_finish_entries_replay_in_band() -> None:
    runtime = registered(scripted(ChunksEntry(tuple(error_chunks("SERVER", "busy")))))
    (finish,) = await collect(runtime.stream(options()))
    assert isinstance(finish, Finish) and finish.reason.kind == "error"
    assert finish.reason.failure == LlmFailure("busy", "SERVER")


async def test_replay_strict_config_difference_is_replay_mismatch_with_a_diff(
    tmp_path: Path,
) -> None:
    datas = turn("hi", [text_chunks("ok")])
    datas[3] = header(max_tokens=100)
    path = await record(datas, tmp_path / "a.jsonl")
    runtime = registered(ReplayAdapter.from_file(path, strict=True))
    live = GenerateOptions(
        provider=ROUTE, model=MODEL, messages=options().messages, max_tokens=200, session_id="s"
    )
    (finish,) = await collect(runtime.stream(live))
    assert isinstance(finish, Finish) and finish.reason.kind == "error"
    failure = finish.reason.failure
    assert failure.code == ErrorCode.REPLAY_MISMATCH
    assert (
        '-    "max_tokens": 100' in failure.message and '+    "max_tokens": 200' in failure.message
    )
    # the same request replays cleanly
    runtime = registered(ReplayAdapter.from_file(path, strict=True))
    same = GenerateOptions(
        provider=ROUTE, model=MODEL, messages=options().messages, max_tokens=100, session_id="s"
    )
    assert await _texts(runtime, same) == ["ok"]
