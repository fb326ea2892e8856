"""Reading a client's JSON body: typed field access that fails with a 400 naming the field.

Every incoming protocol is decoded to plain JSON (`msgspec.json.decode`) and read through these
helpers, so a wrong type anywhere is one clear `INVALID_REQUEST` naming the field's path
(`messages[2].content[0].text`), in the error shape of the endpoint.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Final

import msgspec

from ..vocab import ToolSchema
from .problems import GatewayError

__all__ = [
    "bad",
    "decode_body",
    "get_bool",
    "get_int",
    "get_list",
    "get_map",
    "get_number",
    "get_str",
    "require_str",
    "tool_schema",
]

_DECODER: Final = msgspec.json.Decoder()


def bad(where: str, problem: str) -> GatewayError:
    """A 400 `INVALID_REQUEST` naming the field `where`."""
    return GatewayError(400, "INVALID_REQUEST", f"{where}: {problem}")


def decode_body(raw: bytes) -> Mapping[str, object]:
    """The request body as a JSON object; malformed JSON or another type is a 400."""
    try:
        body = _DECODER.decode(raw)
    except msgspec.DecodeError as exc:
        raise GatewayError(
            400, "INVALID_REQUEST", f"the request body is not valid JSON: {exc}"
        ) from None
    if not isinstance(body, dict):
        raise GatewayError(400, "INVALID_REQUEST", "the request body must be a JSON object")
    return body


def get_map(body: Mapping[str, object], key: str, where: str) -> Mapping[str, object] | None:
    value = body.get(key)
    if value is None:
        return None
    if not isinstance(value, dict):
        raise bad(f"{where}{key}", "must be an object")
    return value


def get_list(body: Mapping[str, object], key: str, where: str) -> Sequence[object] | None:
    value = body.get(key)
    if value is None:
        return None
    if not isinstance(value, list):
        raise bad(f"{where}{key}", "must be an array")
    return value


def get_str(body: Mapping[str, object], key: str, where: str) -> str | None:
    value = body.get(key)
    if value is None:
        return None
    if not isinstance(value, str):
        raise bad(f"{where}{key}", "must be a string")
    return value


def require_str(body: Mapping[str, object], key: str, where: str) -> str:
    value = get_str(body, key, where)
    if value is None:
        raise bad(f"{where}{key}", "is required")
    return value


def get_int(body: Mapping[str, object], key: str, where: str) -> int | None:
    value = body.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise bad(f"{where}{key}", "must be an integer")
    return value


def get_number(body: Mapping[str, object], key: str, where: str) -> float | None:
    value = body.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise bad(f"{where}{key}", "must be a number")
    return float(value)


def get_bool(body: Mapping[str, object], key: str, where: str) -> bool | None:
    value = body.get(key)
    if value is None:
        return None
    if not isinstance(value, bool):
        raise bad(f"{where}{key}", "must be true or false")
    return value


def tool_schema(spec: Mapping[str, object], where: str, schema_key: str) -> ToolSchema:
    """One function tool from its `name`, `description` and JSON Schema under `schema_key`
    (``parameters``, Anthropic's ``input_schema``; absent: any object); `where` ends in a dot."""
    schema = get_map(spec, schema_key, where)
    description = get_str(spec, "description", where) or ""
    parameters = dict(schema) if schema is not None else {"type": "object"}
    return ToolSchema(require_str(spec, "name", where), description, parameters)
