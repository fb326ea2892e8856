"""What every adapter shares to express the answer's shape: the schema instruction for routes
that cannot take a schema natively, `provider_options` merged into a request body, and the
refusal of free-text tools where the wire has none.

`provider_options` are extra top-level body fields for one call (OpenAI's `extra_body` idea).
They are appended after the fields the adapter writes; a key the adapter writes itself (whether
this call sets it or not) is refused with `INVALID_OPTION` naming the key: nothing is silently
overwritten.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Final

import msgspec

from ..errors import ErrorCode, LlmError
from ..vocab import OutputSchema, ToolSchema
from ..vocab.json import JsonValue, thaw_json

__all__ = ["merge_provider_options", "refuse_free_text_tools", "schema_instruction"]

_ENCODE: Final = msgspec.json.encode


def schema_instruction(output: OutputSchema) -> str:
    """The system-prompt paragraph that asks for the answer as JSON matching `output`."""
    about = f" ({output.description})" if output.description else ""
    schema = _ENCODE(thaw_json(output.schema)).decode()
    return (
        f"Answer with exactly one JSON value and nothing else: no prose, no code fence. It must "
        f'match this JSON Schema, named "{output.name}"{about}:\n{schema}'
    )


def merge_provider_options(
    body: bytes, owned: Iterable[str], extra: Mapping[str, JsonValue] | None, route: str
) -> bytes:
    """`body` (a JSON object) with `extra`'s keys appended; a key in `owned` is refused."""
    if not extra:
        return body
    taken = set(owned)
    for key in extra:
        if key in taken:
            raise LlmError(
                f'route "{route}": provider_options.{key} is a field modelwire writes itself; '
                "set it through GenerateOptions instead",
                ErrorCode.INVALID_OPTION,
            )
    tail = _ENCODE(thaw_json(extra))  # b'{"k":v,...}'
    if body == b"{}":
        return tail
    return body[:-1] + b"," + tail[1:]


def refuse_free_text_tools(tools: Iterable[ToolSchema] | None, route: str, api: str) -> None:
    """`UNSUPPORTED_OPTION` naming the first free-text tool, for a protocol without them (only
    OpenAI's Chat Completions and Responses take free-text, "custom", tools)."""
    for schema in tools or ():
        if schema.free_text is not None:
            raise LlmError(
                f'route "{route}" ({api}) cannot send tool "{schema.name}": it takes free text, '
                "and only OpenAI Chat Completions and Responses have free-text (custom) tools",
                ErrorCode.UNSUPPORTED_OPTION,
            )
