"""Structured output and tool choice at the runtime edge (issue: structured output).

Rules pinned: malformed `output` / `tool_choice` / `parallel_tool_calls` / `provider_options` are
one `INVALID_OPTION` naming the field before any adapter is called; an option the route's model
info does not advertise is `UNSUPPORTED_OPTION` naming the option and the route, before any I/O;
where the provider does not enforce the schema the assembled answer is validated and a
mismatch ends in `OUTPUT_INVALID` (never retried by default); a prepared call pins `output` and
`tool_choice`, and drift is refused.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from runtime_helpers import collect

from modelwire import (
    CallConfig,
    Error,
    Finish,
    GenerateOptions,
    LlmRuntime,
    OutputSchema,
    ResolvedModelInfo,
    Stop,
    StreamChunk,
    TextBlock,
    ToolChoiceTool,
    ToolSchema,
    resolve_retry_policy,
    user_message,
)
from modelwire.errors import ErrorCode, LlmError
from modelwire.runtime import LlmAdapter
from modelwire.vocab import BlockEnd, BlockStart, TextDelta

PERSON = OutputSchema(
    "person",
    {
        "type": "object",
        "properties": {"name": {"type": "string"}, "age": {"type": "integer", "minimum": 0}},
        "required": ["name", "age"],
        "additionalProperties": False,
    },
)
ADD = ToolSchema("add", "Add", {"type": "object"})


class Answering(LlmAdapter):
    """Answers `text` as one text block; advertises the given structured-output support."""

    def __init__(
        self,
        text: str,
        support: Any = "emulated",
        tool_choice: bool | None = True,
        parallel: bool | None = True,
    ):
        self.text = text
        self.support = support
        self.tool_choice = tool_choice
        self.parallel = parallel
        self.calls = 0

    async def resolve_model(self, provider: str, model: str) -> ResolvedModelInfo:
        return ResolvedModelInfo(
            provider=provider,
            id=model,
            name=model,
            structured_output=self.support,
            tool_choice=self.tool_choice,
            parallel_tool_calls=self.parallel,
        )

    async def stream(self, options: GenerateOptions) -> AsyncIterator[StreamChunk]:
        self.calls += 1
        for piece in (self.text[: len(self.text) // 2], self.text[len(self.text) // 2 :]):
            yield TextDelta(0, piece)
        yield BlockEnd(0, TextBlock(self.text))
        yield Finish(Stop())


def _runtime(adapter: LlmAdapter) -> LlmRuntime:
    rt = LlmRuntime()
    rt.register_adapter(["route"], adapter)
    return rt


def _ask(**fields: Any) -> GenerateOptions:
    return GenerateOptions("route", "m", (user_message("who?"),), **fields)


async def _finish(rt: LlmRuntime, options: GenerateOptions) -> Finish:
    chunks = await collect(rt.stream(options))
    final = chunks[-1]
    assert isinstance(final, Finish)
    return final


def _code(finish: Finish) -> str:
    assert isinstance(finish.reason, Error)
    return finish.reason.failure.code


async def test_a_valid_answer_passes_the_schema_check() -> None:
    rt = _runtime(Answering('{"name": "Ada", "age": 36}'))
    assert (await _finish(rt, _ask(output=PERSON))).reason == Stop()


@pytest.mark.parametrize(
    ("answer", "detail"),
    [
        ("Ada is 36.", "is not JSON"),
        ('{"name": "Ada", "age": "36"}', "at $.age: "),
        ('{"name": "Ada"}', 'at $: "age" is a required property'),
        ('{"name": "Ada", "age": 36} trailing', "is not JSON"),
    ],
)
async def test_an_answer_that_does_not_match_the_schema_is_output_invalid(
    answer: str, detail: str
) -> None:
    rt = _runtime(Answering(answer))
    finish = await _finish(rt, _ask(output=PERSON))
    assert _code(finish) == ErrorCode.OUTPUT_INVALID
    assert isinstance(finish.reason, Error)
    assert (
        'route/m: the answer does not match output schema "person"' in finish.reason.failure.message
    )
    assert detail in finish.reason.failure.message


async def test_output_invalid_is_not_retried_by_default() -> None:
    policy = resolve_retry_policy(None)
    assert ErrorCode.OUTPUT_INVALID not in getattr(policy, "retryable_codes", ())


async def test_a_native_strict_route_is_trusted_without_a_second_check() -> None:
    rt = _runtime(Answering("not json at all", support="native-strict"))
    assert (await _finish(rt, _ask(output=PERSON))).reason == Stop()
    lax = OutputSchema("person", PERSON.schema, strict=False)  # strict off: checked again
    assert _code(await _finish(rt, _ask(output=lax))) == ErrorCode.OUTPUT_INVALID


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        (
            {"output": OutputSchema("p", ["not", "an", "object"])},
            "output.schema must be a JSON Schema object",
        ),
        ({"output": OutputSchema("p", {"type": 5})}, "output.schema is not a valid JSON Schema"),
        ({"output": OutputSchema("bad name!", {"type": "object"})}, "output.name"),
        (
            {"output": OutputSchema("p", {"$ref": "http://127.0.0.1:9/s.json"})},
            "output.schema cannot be compiled",
        ),
        ({"tool_choice": "required"}, "tool_choice is set but the request offers no tools"),
        ({"tool_choice": "sometimes", "tools": (ADD,)}, "tool_choice must be"),
        ({"tool_choice": ToolChoiceTool("mul"), "tools": (ADD,)}, "tool_choice names tool 'mul'"),
        ({"parallel_tool_calls": "yes"}, "parallel_tool_calls must be a bool"),
        ({"provider_options": {"": 1}}, "provider_options keys must be non-empty strings"),
    ],
)
async def test_malformed_answer_shape_options_are_invalid_option_before_any_call(
    fields: dict[str, Any], field: str
) -> None:
    adapter = Answering("{}")
    finish = await _finish(_runtime(adapter), _ask(**fields))
    assert _code(finish) == ErrorCode.INVALID_OPTION
    assert isinstance(finish.reason, Error)
    assert field in finish.reason.failure.message
    assert adapter.calls == 0


@pytest.mark.parametrize(
    ("adapter", "fields", "option"),
    [
        (Answering("{}", support=None), {"output": PERSON}, "output (structured output)"),
        (
            Answering("{}", tool_choice=None),
            {"tool_choice": "auto", "tools": (ADD,)},
            "tool_choice",
        ),
        (Answering("{}", parallel=False), {"parallel_tool_calls": False}, "parallel_tool_calls"),
    ],
)
async def test_an_option_the_route_does_not_advertise_is_unsupported_before_any_call(
    adapter: Answering, fields: dict[str, Any], option: str
) -> None:
    finish = await _finish(_runtime(adapter), _ask(**fields))
    assert _code(finish) == ErrorCode.UNSUPPORTED_OPTION
    assert isinstance(finish.reason, Error)
    assert f'route "route" cannot honour {option}' in finish.reason.failure.message
    assert adapter.calls == 0


async def test_a_prepared_call_pins_output_and_tool_choice() -> None:
    rt = _runtime(Answering('{"name": "Ada", "age": 36}'))
    prepared = await rt.prepare_call(CallConfig("route", "m", tool_choice="auto", output=PERSON))
    assert (prepared.config.tool_choice, prepared.config.output) == ("auto", PERSON)
    drifted = _ask(tools=(ADD,), tool_choice="required", output=PERSON)
    with pytest.raises(LlmError) as info:
        prepared.stream(drifted)
    assert info.value.code == ErrorCode.INVALID_PREPARED_CALL
    same = _ask(tools=(ADD,), tool_choice="auto", output=PERSON)
    chunks = await collect(prepared.stream(same))
    assert chunks[-1] == Finish(Stop())


async def test_prepare_refuses_a_malformed_output_schema() -> None:
    rt = _runtime(Answering("{}"))
    with pytest.raises(LlmError) as info:
        await rt.prepare_call(CallConfig("route", "m", output=OutputSchema("p", {"type": 5})))
    assert info.value.code == ErrorCode.INVALID_OPTION


async def test_tool_choice_and_output_round_trip_through_json() -> None:
    import msgspec

    options = _ask(tools=(ADD,), tool_choice=ToolChoiceTool("add"), output=PERSON)
    decoded = msgspec.json.decode(msgspec.json.encode(options), type=GenerateOptions)
    assert decoded == options
    assert isinstance(decoded.tool_choice, ToolChoiceTool)


async def test_streaming_text_without_block_end_is_checked_from_its_deltas() -> None:
    class DeltasOnly(Answering):
        async def stream(self, options: GenerateOptions) -> AsyncIterator[StreamChunk]:
            yield BlockStart(0, "text")
            yield TextDelta(0, '{"name": "Ada",')
            yield TextDelta(0, ' "age": -1}')
            yield Finish(Stop())

    finish = await _finish(_runtime(DeltasOnly("")), _ask(output=PERSON))
    assert _code(finish) == ErrorCode.OUTPUT_INVALID
