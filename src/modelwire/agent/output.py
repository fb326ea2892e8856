"""Typed turn outputs: the answer's JSON Schema, how a request asks for it, and its validation.

`output_spec(T)` derives the answer schema from `T` with msgspec (structs, dataclasses and
TypedDicts are the answer object itself; any other type is wrapped as `{"result": T}`) and one
decoder that validates an answer into `T`. `plan_for` picks how one request asks for it, from what
the route advertises (`ResolvedModelInfo`):

- `structured_output` advertised: the request carries `output=OutputSchema(...)`;
- else a final-answer tool (`final_result`, its arguments are the answer) is added, forced with
  `tool_choice` where the route advertises it (`required` when other tools are offered, so the
  model may still use them), else offered with an instruction in the system prompt.

`judge` tells from a step's committed message whether the turn has its answer (`Accepted`), the
answer must be corrected (`Rejected`, with the user message that asks for the correction, or
None when the model already got the problem as the final-answer tool's error result) or the turn
goes on (None: other tool calls ran).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Final, TypeAlias

import msgspec

from ..errors import ErrorCode, HarnessError
from ..vocab import (
    Message,
    OutputSchema,
    PluginSource,
    ResolvedModelInfo,
    TextBlock,
    ToolCallBlock,
    ToolChoice,
    ToolChoiceTool,
    ToolSchema,
    user_message,
)
from ..vocab.json import MAX_JSON_DEPTH, JsonValue, json_nesting_exceeds
from .signature import TOOL_NAME, inline_schema, too_deep

__all__ = [
    "FINAL_TOOL",
    "Accepted",
    "AnswerPlan",
    "OutputSpec",
    "Rejected",
    "Verdict",
    "judge",
    "offers_final",
    "output_spec",
    "plan_for",
]

FINAL_TOOL: Final = "final_result"
"""The name of the final-answer tool (a user tool of that name clashes: `INVALID_CONFIG`)."""

FINAL_INSTRUCTION: Final = (
    f"When you have the final answer, call the `{FINAL_TOOL}` tool with the answer as its "
    "arguments; do not give the final answer as plain text."
)
CORRECTION_SOURCE: Final = PluginSource("modelwire.output")
"""The source of the user messages that ask the model for a corrected answer."""


@dataclass(frozen=True, slots=True)
class Accepted:
    """The answer validated: `value` is the typed output."""

    value: object


@dataclass(frozen=True, slots=True)
class Rejected:
    """The answer did not validate (`problem`); `correction` asks the model for another one (None:
    the model already got the problem as a tool result)."""

    problem: str
    correction: Message | None


Verdict: TypeAlias = Accepted | Rejected


@dataclass(frozen=True, slots=True)
class AnswerPlan:
    """How one request asks for the typed answer (see the module docstring)."""

    output: OutputSchema | None = None
    tool_choice: ToolChoice | None = None
    final_tool: ToolSchema | None = None
    instruction: str | None = None


def _strict_ok(schema: object) -> bool:
    """Whether `schema` meets strict structured output: closed objects, every property required."""
    if isinstance(schema, Mapping):
        properties = schema.get("properties")
        if isinstance(properties, Mapping):
            required = schema.get("required")
            if schema.get("additionalProperties") is not False or not isinstance(required, list):
                return False
            if set(required) != set(properties):
                return False
        return all(_strict_ok(value) for value in schema.values())
    if isinstance(schema, list):
        return all(_strict_ok(value) for value in schema)
    return True


@dataclass(frozen=True, slots=True)
class OutputSpec:
    """The typed answer of a turn: its type, the answer object schema and the validating decoder."""

    output_type: object
    name: str
    schema: dict[str, JsonValue]
    decoder: msgspec.json.Decoder[object]
    wrapped: bool

    def parse(self, raw: str) -> Verdict:
        """Validate one JSON answer (the final tool's arguments or the answer text): strictly (a
        string is never a number), and one nesting past `MAX_JSON_DEPTH` is refused unread."""
        if json_nesting_exceeds(raw.encode("utf-8", "surrogatepass"), MAX_JSON_DEPTH):
            return self.rejected(too_deep())
        try:
            value = self.decoder.decode(raw)
        except (msgspec.ValidationError, msgspec.DecodeError) as exc:
            return self.rejected(str(exc))
        return Accepted(getattr(value, "result") if self.wrapped else value)  # noqa: B009

    def rejected(self, problem: str) -> Rejected:
        """An answer given as text that does not validate: ask for a corrected one."""
        text = (
            f"Your answer does not match the required output ({self.name}): {problem}. "
            "Answer again with only a JSON value that matches the output schema."
        )
        return Rejected(problem, user_message(text, CORRECTION_SOURCE))

    def output_schema(self) -> OutputSchema:
        """The schema for routes with structured output (strict when the schema allows it)."""
        return OutputSchema(self.name, self.schema, strict=_strict_ok(self.schema))

    def final_tool(self) -> ToolSchema:
        """The final-answer tool: its arguments are the answer."""
        return ToolSchema(
            FINAL_TOOL,
            f"Give the final answer ({self.name}). Call this once you have the answer; its "
            "arguments are the answer.",
            self.schema,
        )


def output_spec(output_type: object) -> OutputSpec:
    """The spec of `output_type`; one msgspec cannot express as JSON Schema is `INVALID_CONFIG`."""
    try:
        answer = inline_schema(msgspec.json.schema(output_type))
        wrapped = answer is None
        struct = output_type
        if wrapped:
            struct = msgspec.defstruct(
                FINAL_TOOL, [("result", output_type)], forbid_unknown_fields=True
            )
            answer = inline_schema(msgspec.json.schema(struct))
        decoder: msgspec.json.Decoder[object] = msgspec.json.Decoder(struct)
    except (TypeError, ValueError) as exc:
        raise HarnessError(
            f"output_type {output_type!r} cannot be expressed as JSON Schema: "
            f"{str(exc).strip().splitlines()[-1]}",
            ErrorCode.INVALID_CONFIG,
            cause=exc,
        ) from exc
    assert answer is not None  # a struct's schema is an object definition
    raw_name = "result" if wrapped else getattr(output_type, "__name__", "")
    name = raw_name if isinstance(raw_name, str) and TOOL_NAME.fullmatch(raw_name) else "result"
    return OutputSpec(output_type, name, answer, decoder, wrapped)


def plan_for(spec: OutputSpec, info: ResolvedModelInfo | None, other_tools: bool) -> AnswerPlan:
    """How a request to a route with model info `info` asks for `spec` (module docstring)."""
    if info is not None and info.structured_output is not None:
        return AnswerPlan(output=spec.output_schema())
    tool = spec.final_tool()
    if info is not None and info.tool_choice is True:
        choice: ToolChoice = "required" if other_tools else ToolChoiceTool(FINAL_TOOL)
        return AnswerPlan(tool_choice=choice, final_tool=tool)
    return AnswerPlan(final_tool=tool, instruction=FINAL_INSTRUCTION)


def judge(spec: OutputSpec, final_offered: bool, message: Message) -> Verdict | None:
    """The verdict on a step's committed `message` (see the module docstring)."""
    calls = [block for block in message.content if isinstance(block, ToolCallBlock)]
    if final_offered:
        first: Rejected | None = None
        for call in calls:
            if call.name == FINAL_TOOL:
                verdict = spec.parse(call.arguments or "{}")
                if isinstance(verdict, Accepted):
                    return verdict
                first = first or Rejected(verdict.problem, None)
        if first is not None or calls:
            return first
        text = (
            f"The final answer must be given by calling the `{FINAL_TOOL}` tool: call it now, with "
            "your final answer as its arguments."
        )
        return Rejected(
            "the answer was not given through the final-answer tool",
            user_message(text, CORRECTION_SOURCE),
        )
    if calls:
        return None
    return spec.parse("".join(b.text for b in message.content if isinstance(b, TextBlock)))


def offers_final(tools: Sequence[ToolSchema] | None) -> bool:
    """Whether a request's tools (e.g. a logged header's) include the final-answer tool."""
    return any(tool.name == FINAL_TOOL for tool in tools or ())
