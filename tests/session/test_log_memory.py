"""The session-log interface pinned on the in-memory backend (validation, seqs, reads, registry)."""

from __future__ import annotations

import asyncio

import msgspec
import pytest

from modelwire.errors import HarnessError
from modelwire.session import (
    AbortCause,
    AssistantChunk,
    AssistantMessage,
    EpochHeader,
    LlmRetry,
    LlmRetryStarted,
    MemoryLog,
    RequestContext,
    RequestHeader,
    StepEnd,
    StepStart,
    ToolCallRecord,
    ToolResultRecord,
    TurnAborted,
    TurnBlocked,
    TurnCompleted,
    TurnEnd,
    TurnErrored,
    TurnInterrupted,
    TurnMaxTokens,
    TurnStart,
    UserMessage,
    event_types,
    open_log,
    register_event_type,
)
from modelwire.session.events import decode_event_data, encode_event_data
from modelwire.vocab import (
    CallConfig,
    Finish,
    LlmFailure,
    Stop,
    TextDelta,
    TokenUsage,
    ToolSchema,
    assistant_message,
    tool_result_message,
    user_message,
)
from modelwire.vocab.messages import ModelSource
from modelwire.vocab.options import AdapterDefaults

FAILURE = LlmFailure("slow down", "RATE_LIMIT", status=429, provider_retry_after_ms=2000.0)

ONE_OF_EACH = {
    "turn/start": TurnStart(1),
    "turn/end-completed": TurnEnd(1, TurnCompleted()),
    "turn/end-error": TurnEnd(1, TurnErrored(FAILURE)),
    "turn/end-aborted": TurnEnd(1, TurnAborted(AbortCause("user", "stop"))),
    "turn/end-max-tokens": TurnEnd(1, TurnMaxTokens()),
    "turn/end-blocked": TurnEnd(1, TurnBlocked()),
    "turn/end-interrupted": TurnEnd(1, TurnInterrupted()),
    "step/start": StepStart(1, 1),
    "step/end": StepEnd(1, 1),
    "user/message": UserMessage(user_message("hello")),
    "request/header": RequestHeader(
        EpochHeader(
            config=CallConfig(provider="p", model="m", max_tokens=100),
            adapter_defaults=AdapterDefaults(max_tokens=True),
            system="be brief",
            tools=(ToolSchema("t", "a tool", {"type": "object"}),),
        ),
        "initial",
    ),
    "request/context": RequestContext("p", "m", 128000),
    "request/context-no-window": RequestContext("p", "m"),
    "assistant/chunk": AssistantChunk(1, 1, 1, TextDelta(0, "hi")),
    "assistant/chunk-finish": AssistantChunk(1, 1, 2, Finish(Stop())),
    "assistant/message": AssistantMessage(
        turn=1,
        step=1,
        attempt=1,
        message=assistant_message([], ModelSource("p", "m")),
        usage=TokenUsage(3, 4),
        source_event_seqs=(5, 6),
    ),
    "tool/call": ToolCallRecord(1, 1, "c1", "t", '{"a":1}'),
    "tool/result": ToolResultRecord(
        turn=1, step=1, call_id="c1", name="t", message=tool_result_message("c1", "ok")
    ),
    "llm/retry-normal": LlmRetry(
        retry_id="r",
        turn=1,
        step=1,
        provider="p",
        policy_key='["normal",2]',
        mode="normal",
        failure=FAILURE,
        retry=1,
        max_retries=2,
        delay_ms=12.5,
    ),
    "llm/retry-always": LlmRetry(
        retry_id="r",
        turn=1,
        step=1,
        provider="p",
        policy_key='["always"]',
        mode="always",
        failure=FAILURE,
        retry=1,
        delay_ms=0,
    ),
    "llm/retry-started": LlmRetryStarted(retry_id="r", turn=1, step=1, retry=1),
}


@pytest.mark.parametrize("data", list(ONE_OF_EACH.values()), ids=list(ONE_OF_EACH))
async def test_log_event_roundtrips_through_memory_log(data: msgspec.Struct) -> None:
    log = MemoryLog()
    appended = await log.append("s", data)
    (read,) = await log.read("s")
    assert read == appended
    assert read.data == data
    assert read.type == appended.type


def test_log_always_mode_retry_omits_max_retries_key() -> None:
    _, raw = encode_event_data("s", ONE_OF_EACH["llm/retry-always"])
    assert b"max_retries" not in raw
    assert b'"retry_id":"r"' in raw


def test_log_core_event_types_registered() -> None:
    assert {
        "turn/start",
        "turn/end",
        "step/start",
        "step/end",
        "user/message",
        "request/header",
        "request/context",
        "assistant/chunk",
        "assistant/message",
        "tool/call",
        "tool/result",
        "llm/retry",
        "llm/retry-started",
    } <= set(event_types())


async def test_log_seq_contiguous_from_zero_per_session() -> None:
    log = MemoryLog()
    a = [await log.append("a", TurnStart(i)) for i in range(3)]
    b = await log.append_many("b", [TurnStart(1), StepStart(1, 1)])
    c = await log.append("a", StepStart(1, 1))
    assert [e.seq for e in a] == [0, 1, 2]
    assert [e.seq for e in b] == [0, 1]
    assert c.seq == 3
    assert [e.seq for e in await log.read("a")] == [0, 1, 2, 3]


async def test_log_concurrent_appends_never_collide() -> None:
    log = MemoryLog()

    async def writer(n: int) -> list[int]:
        seqs = []
        for i in range(50):
            seqs.append((await log.append("s", AssistantChunk(1, 1, n, TextDelta(0, str(i))))).seq)
            await asyncio.sleep(0)
        return seqs

    results = await asyncio.gather(*(writer(n) for n in range(1, 9)))
    all_seqs = sorted(s for r in results for s in r)
    assert all_seqs == list(range(400))


async def test_log_read_range_is_half_open() -> None:
    log = MemoryLog()
    await log.append_many("s", [TurnStart(i) for i in range(1, 6)])
    assert [e.seq for e in await log.read("s", 2)] == [2, 3, 4]
    assert [e.seq for e in await log.read("s", 1, 3)] == [1, 2]
    assert await log.read("s", 5) == []
    with pytest.raises(HarnessError) as info:
        await log.read("s", 3, 1)
    assert info.value.code == "INVALID_ARGS"


async def test_log_read_unknown_session_raises_session_not_found() -> None:
    log = MemoryLog()
    with pytest.raises(HarnessError) as info:
        await log.read("ghost")
    assert info.value.code == "SESSION_NOT_FOUND"
    assert "ghost" in info.value.message


async def test_log_latest_returns_highest_seq_of_type() -> None:
    log = MemoryLog()
    await log.append_many("s", [TurnStart(1), StepStart(1, 1), TurnStart(2), StepEnd(1, 1)])
    latest = await log.latest("s", "turn/start")
    assert latest is not None
    assert (latest.seq, latest.data) == (2, TurnStart(2))
    assert await log.latest("s", "llm/retry") is None
    assert await log.latest("ghost", "turn/start") is None


async def test_log_invalid_payload_names_session_type_and_field() -> None:
    log = MemoryLog()
    with pytest.raises(HarnessError) as info:
        await log.append("sess-1", TurnStart("one"))  # type: ignore[arg-type]
    err = info.value
    assert err.code == "INVALID_EVENT"
    assert "sess-1" in err.message
    assert "turn/start" in err.message
    assert "$.turn" in err.message
    assert not await log.exists("sess-1")


async def test_log_unregistered_payload_is_invalid_event() -> None:
    class Stray(msgspec.Struct, frozen=True):
        x: int

    log = MemoryLog()
    with pytest.raises(HarnessError) as info:
        await log.append("s", Stray(1))
    assert info.value.code == "INVALID_EVENT"
    assert "Stray" in info.value.message
    assert "'s'" in info.value.message


async def test_log_append_many_is_all_or_nothing() -> None:
    log = MemoryLog()
    await log.append("s", TurnStart(1))
    with pytest.raises(HarnessError):
        await log.append_many("s", [StepStart(1, 1), StepEnd(1, "x")])  # type: ignore[arg-type]
    assert [e.type for e in await log.read("s")] == ["turn/start"]


async def test_log_stored_unknown_type_or_bad_payload_names_seq() -> None:
    log = MemoryLog()
    await log.append("s", TurnStart(1))
    await log._store("s", [("nobody/knows", 1, b"{}")], barrier=False)
    await log._store("s", [("turn/start", 1, b'{"turn":"x"}')], barrier=False)
    with pytest.raises(HarnessError) as info:
        await log.read("s", 1, 2)
    assert info.value.code == "INVALID_EVENT"
    assert "seq 1" in info.value.message
    assert "nobody/knows" in info.value.message
    with pytest.raises(HarnessError) as info:
        await log.read("s", 2)
    assert "seq 2" in info.value.message
    assert "$.turn" in info.value.message
    # what was valid stays readable
    assert (await log.read("s", 0, 1))[0].data == TurnStart(1)


def test_log_decode_event_data_rejects_mismatch() -> None:
    with pytest.raises(HarnessError) as info:
        decode_event_data("s", 7, "step/start", b'{"turn":1}')
    assert info.value.code == "INVALID_EVENT"
    assert "seq 7" in info.value.message


class PluginNote(msgspec.Struct, frozen=True):
    note: str
    weight: int = 0


async def test_log_plugin_registers_its_own_event_type() -> None:
    register_event_type("test-plugin/note", PluginNote)
    register_event_type("test-plugin/note", PluginNote)  # idempotent
    log = MemoryLog()
    event = await log.append("s", PluginNote("hi", 2))
    assert event.type == "test-plugin/note"
    assert (await log.read("s"))[0].data == PluginNote("hi", 2)


def test_log_registry_rejects_conflicts() -> None:
    class Other(msgspec.Struct, frozen=True):
        y: int

    class Mutable(msgspec.Struct):
        y: int

    with pytest.raises(HarnessError) as info:
        register_event_type("turn/start", Other)
    assert info.value.code == "INVALID_EVENT"
    with pytest.raises(HarnessError):
        register_event_type("test/other", TurnStart)
    with pytest.raises(HarnessError):
        register_event_type("test/mutable", Mutable)
    with pytest.raises(HarnessError):
        register_event_type("", Other)


async def test_log_sessions_and_exists() -> None:
    ticks = iter(range(100, 200))
    log = MemoryLog(clock=lambda: next(ticks))
    await log.append("b", TurnStart(1))
    await log.append_many("a", [TurnStart(1), StepStart(1, 1)])
    await log.append("a", StepEnd(1, 1))
    infos = await log.sessions()
    assert [(i.session_id, i.events, i.first_time, i.last_time) for i in infos] == [
        ("a", 3, 101, 102),
        ("b", 1, 100, 100),
    ]
    assert await log.exists("a")
    assert not await log.exists("c")


async def test_log_append_stamps_epoch_ms_time() -> None:
    log = MemoryLog(clock=lambda: 1_700_000_000_123)
    event = await log.append("s", TurnStart(1))
    assert event.time == 1_700_000_000_123
    import time

    before = time.time_ns() // 1_000_000
    stamped = (await MemoryLog().append("s", TurnStart(1))).time  # the default clock: epoch ms
    assert before <= stamped <= time.time_ns() // 1_000_000


async def test_log_closed_log_raises_log_unavailable() -> None:
    log = await open_log("memory:")
    async with log:
        await log.append("s", TurnStart(1))
        await log.flush()
    assert log.closed
    with pytest.raises(HarnessError) as info:
        await log.append("s", TurnStart(2))
    assert info.value.code == "LOG_UNAVAILABLE"
    await log.close()  # idempotent


async def test_log_empty_session_id_rejected() -> None:
    log = MemoryLog()
    with pytest.raises(HarnessError) as info:
        await log.append("", TurnStart(1))
    assert info.value.code == "INVALID_SESSION_ID"


async def test_log_append_many_empty_is_noop() -> None:
    log = MemoryLog()
    assert await log.append_many("s", []) == []
    assert not await log.exists("s")


@pytest.mark.parametrize(
    "url",
    ["mysql://admin:hunter2@db.example/x", "redis://:hunter2@h/0?password=hunter2", "nonsense"],
    ids=["mysql", "redis", "no-scheme"],
)
async def test_log_open_unknown_scheme_names_url_without_credentials(url: str) -> None:
    with pytest.raises(HarnessError) as info:
        await open_log(url)
    assert info.value.code == "LOG_UNAVAILABLE"
    assert "hunter2" not in info.value.message
    assert url.split(":")[0] in info.value.message


async def test_log_open_memory() -> None:
    log = await open_log("memory:")
    assert isinstance(log, MemoryLog)
