"""Tools from typed Python functions: the schema from the type hints and the docstring, arguments
decoded into the annotated types, a `RunContext` parameter, and definitions refused by name."""

from __future__ import annotations

import dataclasses
from typing import Annotated, Any, Literal, TypedDict

import msgspec
import pytest
from agent_helpers import Rig, of_type, text_script, tool_script

import modelwire as mw
from modelwire.agent import RunContext, Tool, run_tool_call, tool
from modelwire.errors import HarnessError
from modelwire.vocab import TextBlock, ToolCallBlock, ToolResultBlock

SID = "fn-tools"


class Point(msgspec.Struct):
    """A point on the grid."""

    x: int
    y: int = 0


@dataclasses.dataclass
class Box:
    width: float
    label: str = "box"


class Filters(TypedDict, total=False):
    tag: str
    limit: int


def plain(a: int, b: str = "x") -> str:
    return f"{a}{b}"


def constrained(
    n: Annotated[int, msgspec.Meta(ge=1, le=10)],
    ratio: Annotated[float, msgspec.Meta(gt=0, description="from Meta")] = 0.5,
) -> float:
    return n * ratio


def choices(mode: Literal["slow", "fast"], limit: int | None = None, *, tags: list[str]) -> str:
    return mode


def nested(p: Point, box: Box, filters: Filters, scores: dict[str, float]) -> str:
    return "ok"


def positional(a: int, /, b: bool, *, ctx: RunContext) -> str:
    return "ok"


OBJECT = {"type": "object", "additionalProperties": False}

SIGNATURES = [
    (
        plain,
        {
            **OBJECT,
            "properties": {"a": {"type": "integer"}, "b": {"type": "string", "default": "x"}},
            "required": ["a"],
        },
    ),
    (
        constrained,
        {
            **OBJECT,
            "properties": {
                "n": {"type": "integer", "minimum": 1, "maximum": 10},
                "ratio": {
                    "type": "number",
                    "exclusiveMinimum": 0,
                    "description": "from Meta",
                    "default": 0.5,
                },
            },
            "required": ["n"],
        },
    ),
    (
        choices,
        {
            **OBJECT,
            "properties": {
                "mode": {"enum": ["fast", "slow"]},
                "limit": {"anyOf": [{"type": "integer"}, {"type": "null"}], "default": None},
                "tags": {"type": "array", "items": {"type": "string"}},
            },
            "required": ["mode", "tags"],
        },
    ),
    (
        nested,
        {
            **OBJECT,
            "properties": {
                "p": {"$ref": "#/$defs/Point"},
                "box": {"$ref": "#/$defs/Box"},
                "filters": {"$ref": "#/$defs/Filters"},
                "scores": {"type": "object", "additionalProperties": {"type": "number"}},
            },
            "required": ["p", "box", "filters", "scores"],
            "$defs": {
                "Point": {
                    "title": "Point",
                    "description": "A point on the grid.",
                    "type": "object",
                    "properties": {
                        "x": {"type": "integer"},
                        "y": {"type": "integer", "default": 0},
                    },
                    "required": ["x"],
                },
                "Box": {
                    "title": "Box",
                    "type": "object",
                    "properties": {
                        "width": {"type": "number"},
                        "label": {"type": "string", "default": "box"},
                    },
                    "required": ["width"],
                },
                "Filters": {
                    "title": "Filters",
                    "type": "object",
                    "properties": {"tag": {"type": "string"}, "limit": {"type": "integer"}},
                    "required": [],
                },
            },
        },
    ),
    (
        positional,  # the RunContext parameter is not part of the schema
        {
            **OBJECT,
            "properties": {"a": {"type": "integer"}, "b": {"type": "boolean"}},
            "required": ["a", "b"],
        },
    ),
]


@pytest.mark.parametrize(("fn", "expected"), SIGNATURES, ids=[f.__name__ for f, _ in SIGNATURES])
def test_schema_of_an_annotated_signature(fn: Any, expected: dict[str, object]) -> None:
    made = Tool.from_function(fn)
    assert made.name == fn.__name__
    assert msgspec.json.decode(msgspec.json.encode(made.schema.parameters)) == expected


def google(city: str, days: int = 1) -> str:
    """Forecast the weather.

    Uses the regional model.

    Args:
        city (str): The city, as its
            English name.
        days: How many days ahead.

    Returns:
        str: the forecast
    """
    return city


def numpy_style(city: str, days: int = 1) -> str:
    """Forecast the weather.

    Parameters
    ----------
    city : str
        The city, as its
        English name.
    days : int, optional
        How many days ahead.
    """
    return city


def sphinx_style(city: str, days: int = 1) -> str:
    """Forecast the weather.

    :param city: The city, as its
        English name.
    :param int days: How many days ahead.
    :returns: the forecast
    """
    return city


@pytest.mark.parametrize("fn", [google, numpy_style, sphinx_style], ids=lambda f: f.__name__)
def test_docstring_gives_the_description_and_parameter_texts(fn: Any) -> None:
    made = Tool.from_function(fn)
    params = msgspec.json.decode(msgspec.json.encode(made.parameters))
    assert params["properties"]["city"] == {
        "type": "string",
        "description": "The city, as its English name.",
    }
    assert params["properties"]["days"]["description"] == "How many days ahead."
    expected = "Forecast the weather."
    if fn is google:
        expected += "\n\nUses the regional model."
    assert made.description == expected


def test_decorator_forms_and_overrides() -> None:
    @tool(name="weather_now", description="Current weather.", timeout_ms=250)
    async def weather(city: str) -> str:
        """Ignored for the description."""
        return city

    assert (weather.name, weather.description, weather.timeout_ms) == (
        "weather_now",
        "Current weather.",
        250,
    )
    assert mw.tool is tool
    direct = Tool.from_function(plain, "p2", "two")
    assert (direct.name, direct.description) == ("p2", "two")
    assert plain_tool(3, "y") == "3y"  # a decorated function can still be called


@tool
def plain_tool(a: int, b: str = "x") -> str:
    return f"{a}{b}"


class Opaque:
    pass


def untyped(a, b: int) -> int:  # type: ignore[no-untyped-def]
    return b


def unsupported(a: int, thing: Opaque) -> int:
    return a


def star_args(*values: int) -> int:
    return 0


def two_contexts(a: RunContext, b: RunContext) -> int:
    return 0


@pytest.mark.parametrize(
    ("fn", "fragment"),
    [
        (untyped, "parameter 'a' has no type annotation"),
        (unsupported, "parameter 'thing': type"),
        (star_args, "parameter 'values': *args and **kwargs"),
        (two_contexts, "parameter 'b': one keyword RunContext"),
        (lambda x: x, "tool name '<lambda>'"),
    ],
    ids=["unannotated", "unsupported-type", "star-args", "two-contexts", "lambda"],
)
def test_bad_definitions_are_refused_naming_the_parameter(fn: Any, fragment: str) -> None:
    with pytest.raises(HarnessError) as info:
        Tool.from_function(fn)
    assert info.value.code == "INVALID_CONFIG"
    assert fragment in info.value.message


def test_bad_timeout_and_tool_name_clash_are_refused(rig: Rig) -> None:
    with pytest.raises(HarnessError) as info:
        Tool.from_function(plain, timeout_ms=-1)
    assert info.value.code == "INVALID_CONFIG" and "timeout_ms" in info.value.message
    with pytest.raises(HarnessError) as clash:
        rig.agent(tools=[plain, Tool.from_function(choices, name="plain")])
    assert clash.value.code == "INVALID_CONFIG" and "'plain'" in clash.value.message


def _text(record: Any) -> str:
    block = record.message.content[0]
    assert isinstance(block, ToolResultBlock)
    return "".join(b.text for b in block.content if isinstance(b, TextBlock))


async def test_arguments_are_decoded_into_the_annotated_types() -> None:
    seen: list[object] = []

    async def place(p: Point, box: Box, filters: Filters, scores: dict[str, float]) -> str:
        seen.extend([p, box, filters, scores])
        return "placed"

    made = Tool.from_function(place)
    raw = '{"p": {"x": 1}, "box": {"width": 2.5}, "filters": {"tag": "t"}, "scores": {"a": 1}}'
    outcome = await run_tool_call(ToolCallBlock("c", "place", raw), {"place": made})
    assert not outcome.is_error
    assert seen == [Point(1, 0), Box(2.5), {"tag": "t"}, {"a": 1.0}]


@pytest.mark.parametrize(
    ("arguments", "fragment"),
    [
        ('{"n": "many"}', "Expected `int`, got `str` - at `$.n`"),
        ('{"n": 11}', "Expected `int` <= 10 - at `$.n`"),
        ("{}", "Object missing required field `n`"),
        ('{"n": 2, "m": 1}', "Object contains unknown field `m`"),
        ("[1]", "Expected `object`, got `array`"),
        ('{"n": 2', "truncated"),
    ],
    ids=["type", "constraint", "missing", "unknown", "not-object", "bad-json"],
)
async def test_invalid_arguments_are_an_error_result_naming_the_field(
    arguments: str, fragment: str
) -> None:
    calls: list[int] = []

    def scaled(n: Annotated[int, msgspec.Meta(ge=1, le=10)]) -> int:
        calls.append(n)
        return n

    made = Tool.from_function(scaled)
    outcome = await run_tool_call(ToolCallBlock("c", "scaled", arguments), {"scaled": made})
    assert (outcome.is_error, outcome.error_code, outcome.error_class) == (
        True,
        "INVALID_ARGS",
        None,
    )
    text = outcome.message.content[0].content[0].text  # type: ignore[union-attr]
    assert fragment in text and "'scaled'" in text and "call it again" in text
    assert calls == []


async def test_invalid_call_round_trip_then_the_corrected_call_runs(rig: Rig) -> None:
    """Scripted model: an invalid call gets INVALID_ARGS, the loop carries on, the model fixes it."""

    def add(a: int, b: int) -> int:
        return a + b

    rig.adapter.queue(
        tool_script("c1", "add", '{"a": 1, "b": "two"}'),
        tool_script("c2", "add", '{"a": 1, "b": 2}'),
        text_script("3"),
    )
    result = await rig.agent(tools=[add]).run_turn(SID, "1 + 2?")
    assert (result.reason.kind, result.output) == ("completed", "3")
    events = await rig.log.read(SID)
    first, second = of_type(events, "tool/result")
    assert (first.is_error, first.error_code) == (True, "INVALID_ARGS")
    assert "Expected `int`, got `str` - at `$.b`" in _text(first)
    assert (second.is_error, _text(second)) == (False, "3")
    replayed = rig.adapter.requests[1].messages[-1]  # the model saw the error result
    assert replayed == first.message


async def test_sync_and_async_functions_and_the_run_context(rig: Rig) -> None:
    contexts: list[RunContext] = []

    async def remember(note: str, ctx: RunContext) -> dict[str, object]:
        contexts.append(ctx)
        return {"saved": note, "step": ctx.step}

    def shout(text: str) -> str:
        return text.upper()

    rig.adapter.queue(tool_script("c1", "remember", '{"note": "hi"}'), text_script("ok"))
    rig.adapter.queue(tool_script("c2", "shout", '{"text": "hey"}'), text_script("ok"))
    agent = rig.agent(tools=[remember, shout])
    await agent.run_turn(SID, "remember hi")
    await agent.run_turn(SID, "shout")
    (ctx,) = contexts
    assert (ctx.session_id, ctx.turn, ctx.step, ctx.call_id, ctx.tool) == (
        SID,
        1,
        1,
        "c1",
        "remember",
    )
    assert ctx.agent is agent and ctx.log is rig.log and not ctx.signal.cancelled
    first, second = of_type(await rig.log.read(SID), "tool/result")
    assert _text(first) == '{"saved":"hi","step":1}' and _text(second) == "HEY"


class QuotaDenied(HarnessError):
    pass


@pytest.mark.parametrize(
    ("error", "code", "kind"),
    [
        (ValueError("bad value"), "TOOL_FAILED", "ValueError"),
        (QuotaDenied("no quota left", "QUOTA_DENIED"), "QUOTA_DENIED", "QuotaDenied"),
    ],
    ids=["exception", "harness-error"],
)
async def test_a_raising_tool_logs_its_error_class_and_code(
    rig: Rig, error: Exception, code: str, kind: str
) -> None:
    def explode(x: int) -> int:
        raise error

    rig.adapter.queue(tool_script("c1", "explode", '{"x": 1}'), text_script("sorry"))
    result = await rig.agent(tools=[explode]).run_turn(SID, "go")
    (record,) = of_type(await rig.log.read(SID), "tool/result")
    assert (record.is_error, record.error_code, record.error_class) == (True, code, kind)
    assert str(error) in _text(record)
    assert result.reason.kind == "completed"


async def test_repeated_invalid_calls_are_bounded_by_max_steps(rig: Rig) -> None:
    def add(a: int, b: int) -> int:
        return a + b

    rig.adapter.queue(*(tool_script(f"c{i}", "add", '{"a": "x"}') for i in range(10)))
    result = await rig.agent(tools=[add], max_steps=3).run_turn(SID, "1 + 2?")
    assert (result.reason.kind, getattr(result.reason, "limit", None)) == ("limit", "max_steps")
    codes = [r.error_code for r in of_type(await rig.log.read(SID), "tool/result")]
    assert codes == ["INVALID_ARGS"] * 3
