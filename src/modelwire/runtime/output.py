"""Structured output at the runtime edge: the request checks of `output`, `tool_choice`,
`parallel_tool_calls` and `provider_options` (`INVALID_OPTION`; whether a route honours them is
`options_contract`), and the validation of the assembled answer against the schema where the
provider does not enforce it (`OUTPUT_INVALID`).

JSON Schema validation uses `jsonschema-rs` (Draft 4 to 2020-12, compiled once per schema and
cached; measured here ~0.4 µs to validate a small object, against ~3 µs for fastjsonschema and
~70 µs for jsonschema, which also costs ~95 ms of import). It is imported on first use and never
fetches a remote `$ref` (offline).
"""

from __future__ import annotations

import re
from collections import OrderedDict
from collections.abc import AsyncIterator, Mapping
from typing import TYPE_CHECKING, Final

import msgspec

from ..errors import ErrorCode
from ..vocab import (
    BlockEnd,
    Error,
    Finish,
    GenerateOptions,
    LlmFailure,
    OutputSchema,
    Stop,
    StreamChunk,
    TextBlock,
    TextDelta,
    ToolChoiceTool,
)
from ..vocab.json import MAX_JSON_DEPTH, json_nesting_exceeds, thaw_json

if TYPE_CHECKING:
    from jsonschema_rs import Validator

__all__ = [
    "checked_answer",
    "config_shape_problem",
    "shape_problem",
]

_NAME: Final = re.compile(r"[A-Za-z0-9_-]{1,64}")
_CHOICES: Final = frozenset({"auto", "none", "required"})
_ENCODE: Final = msgspec.json.encode
_DECODE: Final = msgspec.json.decode
_CACHE_SIZE: Final = 128
_MAX_DETAIL: Final = 300


class _Validators:
    """Compiled validators by schema JSON (a small LRU: agents reuse a handful of schemas)."""

    def __init__(self) -> None:
        self._compiled: OrderedDict[bytes, Validator] = OrderedDict()

    def get(self, schema: object) -> Validator:
        key = _ENCODE(schema)
        found = self._compiled.get(key)
        if found is None:
            import jsonschema_rs

            found = jsonschema_rs.validator_for(thaw_json(schema), offline=True)
            self._compiled[key] = found
            if len(self._compiled) > _CACHE_SIZE:
                self._compiled.popitem(last=False)
        else:
            self._compiled.move_to_end(key)
        return found


_VALIDATORS: Final = _Validators()


def _schema_problem(output: OutputSchema) -> str | None:
    if not isinstance(output.name, str) or not _NAME.fullmatch(output.name):
        return "output.name must be 1-64 characters of A-Z, a-z, 0-9, _ or -"
    if output.description is not None and not isinstance(output.description, str):
        return "output.description must be a string"
    if not isinstance(output.strict, bool):
        return "output.strict must be a bool"
    if not isinstance(output.schema, Mapping):
        return f"output.schema must be a JSON Schema object, got {type(output.schema).__name__}"
    import jsonschema_rs

    try:
        jsonschema_rs.meta.validate(thaw_json(output.schema))
    except jsonschema_rs.ValidationError as exc:
        return f"output.schema is not a valid JSON Schema: {exc.message[:_MAX_DETAIL]}"
    except (ValueError, TypeError) as exc:  # an unknown $schema draft, a non-JSON value
        return f"output.schema is not a valid JSON Schema: {str(exc)[:_MAX_DETAIL]}"
    try:
        _VALIDATORS.get(output.schema)  # compiled now: a $ref that cannot resolve fails here
    except (jsonschema_rs.ReferencingError, ValueError, TypeError) as exc:
        return f"output.schema cannot be compiled: {str(exc)[:_MAX_DETAIL]}"
    return None


def config_shape_problem(output: object, choice: object) -> str | None:
    """The answer-shape checks a `CallConfig` allows before the request's tools are known."""
    if output is not None:
        if not isinstance(output, OutputSchema):
            return f"output must be an OutputSchema, got {type(output).__name__}"
        problem = _schema_problem(output)
        if problem is not None:
            return problem
    if choice is not None and not isinstance(choice, ToolChoiceTool) and choice not in _CHOICES:
        return 'tool_choice must be "auto", "none", "required" or a ToolChoiceTool'
    return None


def shape_problem(options: GenerateOptions) -> str | None:
    """Why the answer-shape fields of `options` are malformed (naming the field), or None."""
    output = options.output
    if output is not None:
        if not isinstance(output, OutputSchema):
            return f"output must be an OutputSchema, got {type(output).__name__}"
        problem = _schema_problem(output)
        if problem is not None:
            return problem
    choice = options.tool_choice
    if choice is not None:
        if not options.tools:
            return "tool_choice is set but the request offers no tools"
        if isinstance(choice, ToolChoiceTool):
            names = [t.name for t in options.tools]
            if choice.name not in names:
                return f"tool_choice names tool {choice.name!r}, which is not among the tools"
        elif not isinstance(choice, str) or choice not in _CHOICES:
            return 'tool_choice must be "auto", "none", "required" or a ToolChoiceTool'
    parallel = options.parallel_tool_calls
    if parallel is not None and not isinstance(parallel, bool):
        return f"parallel_tool_calls must be a bool, got {type(parallel).__name__}"
    extra = options.provider_options
    if extra is not None:
        if not isinstance(extra, Mapping):
            return f"provider_options must be a JSON object, got {type(extra).__name__}"
        for key in extra:
            if not isinstance(key, str) or not key:
                return "provider_options keys must be non-empty strings"
            problem = _json_problem(key) or _json_problem(extra[key])
            if problem is not None:
                return f"provider_options.{ascii(key)[1:-1]} {problem}"
    return None


def _json_problem(value: object) -> str | None:
    """Why `value` (frozen JSON: `GenerateOptions` refused anything else) cannot be sent in a
    UTF-8 JSON body (never quoting it), or None."""
    try:
        _ENCODE(thaw_json(value))
    except UnicodeEncodeError:
        return "contains a lone surrogate (no UTF-8 body can carry it)"
    return None


def answer_problem(output: OutputSchema, text: str) -> str | None:
    """Why `text` is not one JSON value matching `output.schema`, or None (one nesting past
    `MAX_JSON_DEPTH` is refused before it is decoded)."""
    raw = text.strip().encode("utf-8", "surrogatepass")
    if json_nesting_exceeds(raw, MAX_JSON_DEPTH):
        return f"the answer nests JSON deeper than {MAX_JSON_DEPTH} levels (the limit)"
    try:
        value = _DECODE(raw)
    except msgspec.DecodeError as exc:
        return f"the answer is not JSON ({str(exc)[:_MAX_DETAIL]})"
    validator = _VALIDATORS.get(output.schema)
    errors = list(validator.iter_errors(value))
    if not errors:
        return None
    first = errors[0]
    path = "$" + "".join(
        f".{p}" if isinstance(p, str) and p.isidentifier() else f"[{p!r}]"
        for p in first.instance_path
    )
    more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
    return f"at {path}: {first.message[:_MAX_DETAIL]}{more}"


async def checked_answer(
    stream: AsyncIterator[StreamChunk], output: OutputSchema, route: str, model: str
) -> AsyncIterator[StreamChunk]:
    """Pass `stream` through; a `stop` finish whose answer text does not match `output` becomes
    `Finish(Error(OUTPUT_INVALID))` (not retried by default: the same request would likely give
    the same kind of answer). Other finishes pass unchanged."""
    parts: dict[int, list[str]] = {}
    final: dict[int, str] = {}
    async for chunk in stream:
        if type(chunk) is TextDelta:
            parts.setdefault(chunk.index, []).append(chunk.text)
        elif type(chunk) is BlockEnd and type(chunk.block) is TextBlock:
            final[chunk.index] = chunk.block.text
        elif type(chunk) is Finish and type(chunk.reason) is Stop:
            indexes = sorted(set(parts) | set(final))
            text = "".join(final.get(i) or "".join(parts.get(i, ())) for i in indexes)
            problem = answer_problem(output, text)
            if problem is not None:
                message = f'{route}/{model}: the answer does not match output schema "{output.name}": {problem}'
                yield Finish(Error(LlmFailure(message, ErrorCode.OUTPUT_INVALID)))
                return
        yield chunk
