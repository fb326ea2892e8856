"""A Python function as a tool: its JSON Schema from the type hints, its arguments decoded by msgspec.

The parameters become the fields of one msgspec struct (`forbid_unknown_fields`), so
`msgspec.json.schema` derives the schema — msgspec structs, dataclasses, TypedDicts, `Annotated`
constraints (`msgspec.Meta`), `Literal`, optional and default parameters — and one typed decoder
validates a call's raw JSON arguments into the annotated types, strictly: a string is never a
number or a bool (`"5"` is not an `int`, `"nan"` not a `float`; JSON itself has no NaN or
Infinity, and a number past the float range is refused), and arguments nesting deeper than
`MAX_JSON_DEPTH` levels are refused before the decoder recurses into them.
Parameter texts come from the docstring (`docstrings.py`) unless an `Annotated` `Meta` already
describes the parameter. A parameter annotated `RunContext` receives the call's context and is
left out of the schema. Anything the schema cannot express is refused at definition time with
`INVALID_CONFIG` naming the parameter.
"""

from __future__ import annotations

import copy
import functools
import inspect
import re
import typing
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Final

import msgspec

from ..errors import ErrorCode, HarnessError
from ..vocab.json import MAX_JSON_DEPTH, JsonValue, json_nesting_exceeds
from .context import RunContext
from .docstrings import parse_docstring

__all__ = [
    "TOOL_NAME",
    "ArgsError",
    "Signature",
    "inline_schema",
    "signature_of",
    "text_parameter",
    "too_deep",
]

TOOL_NAME: Final = re.compile(r"[A-Za-z0-9_-]{1,64}")
"""What every provider accepts as a tool name."""

_MUTABLE = (list, dict, set, bytearray)


class ArgsError(HarnessError):
    """A call's arguments do not validate (code `INVALID_ARGS`); the message names the field."""


def inline_schema(schema: object) -> dict[str, JsonValue] | None:
    """`schema` (msgspec's `{"$ref": ..., "$defs": ...}` form) with the object definition it
    refers to inlined at the top, without its `title`; the other definitions stay under `$defs`.
    None when the top is not a reference to an object definition."""
    if not isinstance(schema, dict) or not isinstance(ref := schema.get("$ref"), str):
        return None
    defs = dict(schema.get("$defs") or {})
    top = defs.pop(ref.rsplit("/", 1)[-1], None)
    if not isinstance(top, dict) or top.get("type") != "object":
        return None
    out: dict[str, JsonValue] = {k: v for k, v in top.items() if k != "title"}
    if defs:
        out["$defs"] = defs
    return out


@dataclass(frozen=True, slots=True)
class Signature:
    """A function's tool face: description, parameters schema and the typed call."""

    description: str
    schema: dict[str, JsonValue]
    decoder: msgspec.json.Decoder[msgspec.Struct]
    positional: tuple[str, ...]
    keywords: tuple[str, ...]
    context: str | None

    def bind(self, raw: str, context: RunContext | None) -> tuple[list[object], dict[str, object]]:
        """Decode `raw` JSON arguments into the call's positional and keyword arguments.

        Arguments that do not validate raise `ArgsError` naming the field and what was expected
        (or the depth limit they pass).
        """
        if json_nesting_exceeds(raw.encode("utf-8", "surrogatepass"), MAX_JSON_DEPTH):
            raise ArgsError(too_deep(), ErrorCode.INVALID_ARGS)
        try:
            values = self.decoder.decode(raw.strip() or "{}")
        except (msgspec.ValidationError, msgspec.DecodeError) as exc:
            raise ArgsError(f"{exc}", ErrorCode.INVALID_ARGS) from exc
        args = [getattr(values, name) for name in self.positional]
        kwargs = {name: getattr(values, name) for name in self.keywords}
        if self.context is not None:
            kwargs[self.context] = context
        return args, kwargs


def too_deep() -> str:
    """The problem of arguments (or an answer) nesting past `MAX_JSON_DEPTH`."""
    return f"the JSON nests arrays and objects deeper than {MAX_JSON_DEPTH} levels (the limit)"


def _refuse(tool: str, text: str, cause: BaseException | None = None) -> HarnessError:
    return HarnessError(f"tool {tool!r}: {text}", ErrorCode.INVALID_CONFIG, cause=cause)


def _described(hint: object, text: str | None) -> object:
    """`hint` carrying the docstring's `text`, unless an `Annotated` `Meta` describes it already."""
    if not text:
        return hint
    metadata = getattr(hint, "__metadata__", ()) if typing.get_origin(hint) is Annotated else ()
    if any(isinstance(meta, msgspec.Meta) and meta.description for meta in metadata):
        return hint
    return Annotated[hint, msgspec.Meta(description=text)]


def _is_context(hint: object) -> bool:
    if typing.get_origin(hint) is Annotated:
        hint = typing.get_args(hint)[0]
    return hint is RunContext


def signature_of(fn: Callable[..., object], tool: str) -> Signature:
    """The tool face of `fn` (see the module docstring); `INVALID_CONFIG` names what fails."""
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError) as exc:
        raise _refuse(tool, f"cannot read the signature of {fn!r}", exc) from exc
    try:
        hints = typing.get_type_hints(fn, include_extras=True)
    except Exception as exc:  # NameError and friends from a string annotation
        raise _refuse(tool, f"cannot resolve the type hints: {exc}", exc) from exc
    doc = parse_docstring(inspect.getdoc(fn))
    fields: list[tuple[str, object, object]] = []
    positional: list[str] = []
    keywords: list[str] = []
    context: str | None = None
    for name, param in params.items():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            raise _refuse(tool, f"parameter {name!r}: *args and **kwargs cannot be described")
        if name not in hints:
            raise _refuse(tool, f"parameter {name!r} has no type annotation")
        hint = hints[name]
        if _is_context(hint):
            if param.kind is param.POSITIONAL_ONLY or context is not None:
                raise _refuse(tool, f"parameter {name!r}: one keyword RunContext parameter only")
            context = name
            continue
        try:
            msgspec.json.schema(hint)
        except (TypeError, ValueError) as exc:
            raise _refuse(
                tool, f"parameter {name!r}: type {hint!r} cannot be expressed as JSON Schema", exc
            ) from exc
        default: object = msgspec.NODEFAULT
        if param.default is not param.empty:
            value = param.default
            default = (
                msgspec.field(default_factory=functools.partial(copy.deepcopy, value))
                if isinstance(value, _MUTABLE) and value
                else value
            )
        fields.append((name, _described(hint, doc.params.get(name)), default))
        (positional if param.kind is param.POSITIONAL_ONLY else keywords).append(name)
    try:
        struct = msgspec.defstruct(
            f"{tool}_arguments", fields, kw_only=True, forbid_unknown_fields=True
        )
        schema = inline_schema(msgspec.json.schema(struct))
        assert schema is not None  # a struct's schema is an object definition
        decoder: msgspec.json.Decoder[msgspec.Struct] = msgspec.json.Decoder(struct)
    except (TypeError, ValueError) as exc:
        raise _refuse(tool, f"parameters cannot be expressed as JSON Schema: {exc}", exc) from exc
    return Signature(doc.description, schema, decoder, tuple(positional), tuple(keywords), context)


def text_parameter(sig: Signature, tool: str) -> str:
    """The one `str` parameter a free-text function takes (`INVALID_CONFIG` otherwise)."""
    names = (*sig.positional, *sig.keywords)
    properties = sig.schema.get("properties")
    kind = properties.get(names[0]) if len(names) == 1 and isinstance(properties, dict) else None
    if not (isinstance(kind, dict) and kind.get("type") == "string"):
        raise HarnessError(
            f"tool {tool!r}: a free-text tool's function takes exactly one str parameter "
            "(and optionally a RunContext)",
            ErrorCode.INVALID_CONFIG,
        )
    return names[0]
