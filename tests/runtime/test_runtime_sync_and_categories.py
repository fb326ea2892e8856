"""`generate_sync` for scripts and notebooks, and the runtime raising failures by category."""

from __future__ import annotations

import pytest
from runtime_helpers import ScriptedAdapter, opts

import modelwire as mw
from modelwire.runtime import LlmAdapter, LlmRuntime
from modelwire.vocab import CallConfig, Error, Finish, LlmFailure, ResolvedModelInfo, TextBlock


class Unknown(LlmAdapter):
    async def resolve_model(self, provider: str, model: str) -> ResolvedModelInfo:
        raise mw.LlmError(f"no model {model}", "MODEL_NOT_FOUND", status=404)

    async def stream(self, options: mw.GenerateOptions):  # type: ignore[no-untyped-def,override]
        yield Finish(Error(LlmFailure("busy", "RATE_LIMIT", status=429)))


def test_generate_sync_without_a_running_loop(rt: LlmRuntime) -> None:
    rt.register_adapter(["p"], ScriptedAdapter())
    result = rt.generate_sync(opts())
    assert result.message.content == (TextBlock("hi"),)


async def test_generate_sync_inside_a_running_loop(rt: LlmRuntime) -> None:
    rt.register_adapter(["p"], ScriptedAdapter())
    assert rt.generate_sync(opts()).message.content == (TextBlock("hi"),)


async def test_model_lookups_raise_by_category(rt: LlmRuntime) -> None:
    rt.register_adapter(["p"], Unknown())
    with pytest.raises(mw.ModelNotFoundError) as found:
        await rt.prepare_call(CallConfig("p", "ghost"))
    assert (found.value.code, found.value.status) == ("MODEL_NOT_FOUND", 404)
    assert isinstance(found.value.__cause__, mw.LlmError)
    with pytest.raises(mw.ModelNotFoundError):
        await rt.resolve_model_info("p", "ghost")
    with pytest.raises(mw.InvalidRequestError) as bad:
        await rt.prepare_call(CallConfig("p", "m", max_tokens=-1))
    assert bad.value.code == "INVALID_OPTION"


async def test_stream_blocks_raises_the_failure_by_category(rt: LlmRuntime) -> None:
    class Busy(ScriptedAdapter):
        async def stream(self, options: mw.GenerateOptions):  # type: ignore[no-untyped-def,override]
            yield Finish(Error(LlmFailure("busy", "RATE_LIMIT", status=429)))

    rt.register_adapter(["p"], Busy())
    with pytest.raises(mw.RateLimitError) as info:
        async for _ in rt.stream_blocks(opts()):
            pass
    assert (info.value.code, info.value.status) == ("RATE_LIMIT", 429)
    result = rt.generate_sync(opts())  # generate never raises for a provider failure
    assert isinstance(result.finish, Error) and result.finish.failure.code == "RATE_LIMIT"
