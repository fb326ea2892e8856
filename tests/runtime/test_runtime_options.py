"""The runtime edge validates every request: INVALID_OPTION naming the field, before any adapter."""

from __future__ import annotations

import math
from typing import Any

import msgspec
import pytest
from runtime_helpers import CatalogAdapter, collect

from modelwire.errors import LlmError
from modelwire.runtime import LlmRuntime
from modelwire.runtime.validation import MAX_OUTPUT_TOKENS, call_config_problem, options_problem
from modelwire.vocab import (
    CallConfig,
    Error,
    Finish,
    GenerateOptions,
    ImageAttachmentRef,
    ImageBlock,
    TextBlock,
    ToolCallBlock,
    ToolSchema,
    assistant_message,
    user_message,
)
from modelwire.vocab.messages import ModelSource


def opts(**fields: Any) -> GenerateOptions:
    fields.setdefault("messages", ())
    return GenerateOptions(provider="p", model="m", **fields)


def _registered(rt: LlmRuntime) -> CatalogAdapter:
    adapter = CatalogAdapter()
    rt.register_adapter(["p"], adapter)
    return adapter


def _invalid(chunks: list[Any], field: str) -> None:
    assert len(chunks) == 1, chunks
    (finish,) = chunks
    assert isinstance(finish, Finish) and isinstance(finish.reason, Error)
    assert finish.reason.failure.code == "INVALID_OPTION"
    assert field in finish.reason.failure.message, finish.reason.failure.message


BAD_OPTIONS = [
    pytest.param({"temperature": math.nan}, "temperature must be a finite number", id="nan"),
    pytest.param({"temperature": "0.5"}, "temperature must be a finite number", id="temp-str"),
    pytest.param({"temperature": True}, "temperature must be a finite number", id="temp-bool"),
    pytest.param({"max_tokens": "5"}, "max_tokens must be an integer", id="max-tokens-str"),
    pytest.param({"max_tokens": -3}, "max_tokens must be an integer", id="max-tokens-negative"),
    pytest.param(
        {"max_tokens": MAX_OUTPUT_TOKENS + 1}, "max_tokens must be an integer", id="absurd"
    ),
    pytest.param({"messages": None}, "messages must be a sequence", id="messages-none"),
    pytest.param({"messages": ("hi",)}, "messages[0] must be a Message", id="not-a-message"),
    pytest.param({"system": "a\ud800"}, "system contains a lone surrogate", id="system"),
    pytest.param({"system": 5}, "system must be a string", id="system-int"),
    pytest.param({"stop": ("ok", "x\udfff")}, "stop[1] contains a lone surrogate", id="stop"),
    pytest.param({"reasoning_effort": "\ud800"}, "reasoning_effort contains", id="effort"),
    pytest.param(
        {"tools": (ToolSchema("t", "d\udc00", {}),)}, "tools[0].description", id="tool-text"
    ),
    pytest.param(
        {"tools": (ToolSchema("t", "d", {"enum": ["\udc00"]}),)},
        "tools[0].parameters contains a lone surrogate",
        id="tool-schema",
    ),
]


@pytest.mark.parametrize(("fields", "field"), BAD_OPTIONS)
async def test_malformed_request_ends_in_one_invalid_option_before_the_adapter(
    rt: LlmRuntime, fields: dict[str, Any], field: str
) -> None:
    adapter = _registered(rt)
    _invalid(await collect(rt.stream(opts(**fields))), field)
    assert adapter.lookups == 0 and adapter.calls == 0  # not even the model was resolved
    result = await rt.generate(opts(**fields))
    assert isinstance(result.finish, Error) and result.finish.failure.code == "INVALID_OPTION"
    assert result.message.content == ()
    with pytest.raises(LlmError) as raised:
        async for _ in rt.stream_blocks(opts(**fields)):
            pass
    assert raised.value.code == "INVALID_OPTION"
    assert adapter.lookups == 0 and adapter.calls == 0


async def test_surrogates_anywhere_in_a_message_name_the_block_field(rt: LlmRuntime) -> None:
    adapter = _registered(rt)
    call = ToolCallBlock("c1", "add", '{"a": "\ud834"}')
    answer = assistant_message((TextBlock("ok"), call), ModelSource("p", "m"))
    _invalid(
        await collect(rt.stream(opts(messages=(user_message("q"), answer)))),
        "messages[1].content[1].arguments contains a lone surrogate",
    )
    bogus = msgspec.structs.replace(user_message("q"), content=(TextBlock("a"), "b"))
    _invalid(
        await collect(rt.stream(opts(messages=(bogus,)))),
        "messages[0].content[1] must be a content block",
    )
    assert adapter.calls == 0


async def test_the_failure_never_quotes_the_text(rt: LlmRuntime) -> None:
    _registered(rt)
    secret = "token-1234567890 \ud800"
    (finish,) = await collect(rt.stream(opts(messages=(user_message(secret),))))
    assert isinstance(finish, Finish) and isinstance(finish.reason, Error)
    assert "token-1234567890" not in finish.reason.failure.message


async def test_a_request_that_is_not_generate_options_is_invalid_option(rt: LlmRuntime) -> None:
    _registered(rt)
    _invalid(await collect(rt.stream(None)), "GenerateOptions")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "fields",
    [
        {"temperature": 0},
        {"temperature": 1.5},
        {"temperature": -0.0},
        {"max_tokens": 1},
        {"max_tokens": MAX_OUTPUT_TOKENS},
        {"messages": (user_message("héllo wörld 😀 \u2028 \x00"),)},
        {"system": "系统", "stop": ["END"], "session_id": "s-é", "purpose": "compaction"},
        {"tools": (ToolSchema("t", "d", {"type": "object", "enum": ["é", "😀"]}),)},
    ],
    ids=lambda fields: "+".join(sorted(fields)),  # stable: messages carry fresh ids
)
async def test_well_formed_requests_reach_the_adapter(
    rt: LlmRuntime, fields: dict[str, Any]
) -> None:
    adapter = _registered(rt)
    chunks = await collect(rt.stream(opts(**fields)))
    assert chunks[-1] == Finish(adapter.script[-1].reason)  # type: ignore[union-attr]
    assert adapter.calls == 1
    assert options_problem(opts(**fields)) is None


def test_image_blocks_pass_and_bad_attachments_are_named() -> None:
    ref = ImageAttachmentRef("a1", "image/png", 10, 1, 1)
    assert options_problem(opts(messages=(user_message([ImageBlock(ref)]),))) is None
    bad = ImageBlock("not-a-ref")  # type: ignore[arg-type]
    assert options_problem(opts(messages=(user_message([bad]),))) == (
        "messages[0].content[0].attachment must be an image attachment reference"
    )


def test_effort_text_is_checked_but_its_value_is_the_adapters_business() -> None:
    assert options_problem(opts(reasoning_effort="high")) is None


# ---- call configs ----------------------------------------------------------------------------

BAD_CONFIGS = [
    pytest.param({"temperature": math.inf}, "temperature must be a finite number", id="inf"),
    pytest.param({"max_tokens": "5"}, "max_tokens must be an integer", id="max-tokens-str"),
    pytest.param({"max_tokens": 0}, "max_tokens must be an integer", id="max-tokens-zero"),
    pytest.param({"stop": ("\ud800",)}, "stop[0] contains a lone surrogate", id="stop"),
    pytest.param({"model": "m\ud800"}, "model contains a lone surrogate", id="model"),
    pytest.param({"provider": ["p"]}, "provider must be a string", id="provider-list"),
]


@pytest.mark.parametrize(("fields", "field"), BAD_CONFIGS)
async def test_malformed_call_config_is_invalid_option_when_prepared(
    rt: LlmRuntime, fields: dict[str, Any], field: str
) -> None:
    adapter = _registered(rt)
    values: dict[str, Any] = {"provider": "p", "model": "m", **fields}
    config = CallConfig(**values)
    pending = rt.prepare_call(config)  # like NO_ADAPTER: raised when awaited, never at the call
    with pytest.raises(LlmError) as prepared:
        await pending
    assert prepared.value.code == "INVALID_OPTION" and field in prepared.value.message
    with pytest.raises(LlmError) as resolved:
        await rt.resolve_call_config(config)
    assert resolved.value.code == "INVALID_OPTION" and field in resolved.value.message
    assert adapter.lookups == 0
    assert call_config_problem(config) is not None


async def test_prepared_call_stream_refuses_a_malformed_request_in_band(rt: LlmRuntime) -> None:
    adapter = _registered(rt)
    prepared = await rt.prepare_call(CallConfig("p", "m"))
    lookups = adapter.lookups
    options = GenerateOptions(provider="p", model="m", messages=(user_message("x\udfff"),))
    _invalid(await collect(prepared.stream(options)), "messages[0].content[0].text")
    assert adapter.calls == 0 and adapter.lookups == lookups
