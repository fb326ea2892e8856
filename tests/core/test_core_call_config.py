"""Call config R-CC-1 and the frozen-value rules R-CC-3..7 adapted to msgspec structs (§11.7)."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from modelwire import (
    CallConfig,
    GenerateOptions,
    ReplayEnvelope,
    TextBlock,
    ToolResultBlock,
    ToolSchema,
    call_config_equals,
    tool_result_message,
    user_message,
)
from modelwire.vocab import FrozenDict, freeze_json, freeze_message

BASE = CallConfig(provider="deepseek", model="deepseek-chat")


@pytest.mark.parametrize(
    ("a", "b", "equal"),
    [
        pytest.param(
            BASE, CallConfig(provider="deepseek", model="deepseek-chat"), True, id="identical"
        ),
        pytest.param(
            BASE, CallConfig(provider="other", model="deepseek-chat"), False, id="provider"
        ),
        pytest.param(BASE, CallConfig(provider="deepseek", model="other"), False, id="model"),
        pytest.param(
            BASE,
            msgspec.structs.replace(BASE, reasoning_effort="high"),
            False,
            id="effort-one-side",
        ),
        pytest.param(
            msgspec.structs.replace(BASE, reasoning_effort="high"),
            msgspec.structs.replace(BASE, reasoning_effort="high"),
            True,
            id="effort-both",
        ),
        pytest.param(BASE, msgspec.structs.replace(BASE, temperature=0.5), False, id="temperature"),
        pytest.param(
            msgspec.structs.replace(BASE, max_tokens=1),
            msgspec.structs.replace(BASE, max_tokens=2),
            False,
            id="max-tokens",
        ),
        pytest.param(BASE, msgspec.structs.replace(BASE, stop=("a",)), False, id="stop-one-side"),
        pytest.param(
            msgspec.structs.replace(BASE, stop=("a",)),
            msgspec.structs.replace(BASE, stop=("a", "b")),
            False,
            id="stop-length",
        ),
        pytest.param(
            msgspec.structs.replace(BASE, stop=("a",)),
            msgspec.structs.replace(BASE, stop=("b",)),
            False,
            id="stop-element",
        ),
        pytest.param(
            msgspec.structs.replace(BASE, stop=("a", "b")),
            msgspec.structs.replace(BASE, stop=("a", "b")),
            True,
            id="stop-both",
        ),
        pytest.param(
            msgspec.structs.replace(BASE, temperature=1),
            msgspec.structs.replace(BASE, temperature=1.0),
            True,
            id="int-equals-float",
        ),
        pytest.param(
            msgspec.structs.replace(BASE, temperature=float("nan")),
            msgspec.structs.replace(BASE, temperature=float("nan")),
            False,
            id="nan-never-equal",
        ),
        pytest.param(
            msgspec.structs.replace(BASE, max_tokens=1),
            msgspec.structs.replace(BASE, max_tokens=True),
            False,
            id="bool-never-number",
        ),
    ],
)
def test_cc_01_call_config_equals(a: CallConfig, b: CallConfig, equal: bool) -> None:
    assert call_config_equals(a, b) is equal
    assert call_config_equals(b, a) is equal


def test_cc_01_generate_options_compare_with_a_config() -> None:
    options = GenerateOptions(provider="deepseek", model="deepseek-chat", messages=(), system="s")
    assert call_config_equals(options, BASE)


def test_cc_02_frozen_json_rejects_mutation_at_every_level() -> None:
    source: dict[str, Any] = {"a": {"b": [1, {"c": "x"}]}}
    env = ReplayEnvelope(source)
    frozen = env.response
    assert frozen == {"a": {"b": (1, {"c": "x"})}}
    assert isinstance(frozen, FrozenDict)
    inner = frozen["a"]["b"][1]
    with pytest.raises(TypeError):
        inner["c"] = "y"
    with pytest.raises(TypeError):
        frozen["a"].pop("b")
    with pytest.raises(TypeError):
        frozen["a"]["b"][0] = 2  # tuples refuse item assignment
    source["a"]["b"][1]["c"] = "changed"  # the caller's value was copied, not captured
    assert env.response["a"]["b"][1]["c"] == "x"
    with pytest.raises(AttributeError):
        env.response = {}  # type: ignore[misc]


def test_cc_03_variants_are_derived_never_mutated() -> None:
    options = GenerateOptions(provider="a", model="m", messages=(user_message("hi"),))
    with pytest.raises(AttributeError):
        options.provider = "b"  # type: ignore[misc]
    routed = msgspec.structs.replace(options, provider="b")
    assert (options.provider, routed.provider) == ("a", "b")
    assert routed.messages is options.messages  # frozen parts are shared, not copied


def test_cc_04_primitives_pass_through_and_cycles_are_refused() -> None:
    assert freeze_json(42) == 42
    assert freeze_json(None) is None
    assert freeze_json("s") == "s"
    cyclic: dict[str, object] = {}
    cyclic["self"] = cyclic
    with pytest.raises(ValueError, match="cycle"):
        freeze_json(cyclic)
    shared = [1, {"k": "v"}]
    diamond = freeze_json({"x": shared, "y": [shared], "z": shared})
    assert diamond == {"x": (1, {"k": "v"}), "y": ((1, {"k": "v"}),), "z": (1, {"k": "v"})}
    with pytest.raises(TypeError, match="not a JSON value"):
        freeze_json({"bad": object()})


def test_cc_05_deep_nesting_is_frozen_iteratively() -> None:
    root: list[object] = []
    cursor = root
    for _ in range(5000):
        child: list[object] = []
        cursor.append(child)
        cursor = child
    frozen = freeze_json(root)
    depth = 0
    node = frozen
    while node:
        assert isinstance(node, tuple)
        node = node[0]
        depth += 1
    assert depth == 5000


def test_cc_06_helper_constructors_copy_their_input() -> None:
    blocks = [TextBlock("a")]
    msg = user_message(blocks)
    blocks.append(TextBlock("b"))
    assert msg.content == (TextBlock("a"),)
    nested = [TextBlock("r")]
    result = tool_result_message("call-1", nested)
    nested.clear()
    block = result.content[0]
    assert isinstance(block, ToolResultBlock)
    assert block.content == (TextBlock("r"),)
    imported = freeze_message(msg)
    assert imported is not msg and imported == msg
    params = {"type": "object", "properties": {"x": {"type": "string"}}}
    schema = ToolSchema("t", "d", params)
    params["properties"]["x"]["type"] = "number"  # type: ignore[index]
    assert schema.parameters["properties"]["x"]["type"] == "string"
    with pytest.raises(TypeError):
        schema.parameters["type"] = "array"
