"""Per-call request validation at the runtime edge: `INVALID_OPTION` naming the offending field.

msgspec structs do not type-check on construction, so a `GenerateOptions` or `CallConfig` can
carry anything: `messages=None`, `max_tokens="5"`, a NaN temperature (which JSON-encodes as
``null``), text with a lone surrogate (which no UTF-8 body can carry). The runtime checks each
request once before it selects a route or calls an adapter, so every adapter sees the same rules
and a refused request never reaches the network:

* texts (message content, the system prompt, tool names and descriptions, stop sequences, the
  model id, the effort) must be strings without lone surrogates — ``messages[2].content[0].text
  contains a lone surrogate``;
* ``temperature`` must be a finite number;
* ``max_tokens`` must be an integer in ``1..MAX_OUTPUT_TOKENS``, the deadlines (``timeout_ms``,
  ``first_token_timeout_ms``) integers in ``0..MAX_OUTPUT_TOKENS`` (0 = none);
* ``messages`` must be a sequence of `Message`s with known roles and content blocks.

Cost: one pass over the texts, per call (nothing here runs per chunk). `str.isascii` is O(1) in
CPython, so ASCII text costs nothing more; other text costs one strict UTF-8 encode, a copy of the
UTF-8 form CPython caches once msgspec has encoded the string for an earlier request body.
"""

from __future__ import annotations

import math
import re
from typing import Final

import msgspec

from ..vocab import (
    AudioBlock,
    CallConfig,
    DocumentBlock,
    GenerateOptions,
    ImageAttachmentRef,
    ImageBlock,
    Message,
    ReasoningBlock,
    TextBlock,
    ToolCallBlock,
    ToolResultBlock,
    ToolSchema,
)
from .media import media_problem

__all__ = ["MAX_OUTPUT_TOKENS", "call_config_problem", "options_problem"]

MAX_OUTPUT_TOKENS: Final = 2**31 - 1
"""The largest `max_tokens` a request may carry: the signed 32-bit bound of provider APIs."""

_SURROGATE: Final = re.compile("[\ud800-\udfff]")
_ROLES: Final = ("system", "user", "assistant")  # tuples: membership never hashes the value
_PURPOSES: Final = ("compaction", "session-title")
_ENCODE: Final = msgspec.json.Encoder().encode
_BLOCK_KINDS: Final[frozenset[type]] = frozenset(
    {
        TextBlock,
        ReasoningBlock,
        ToolCallBlock,
        ToolResultBlock,
        ImageBlock,
        DocumentBlock,
        AudioBlock,
    }
)


def _why(value: object) -> str | None:
    """Why `value` cannot be sent as text (never quoting it), or None.

    ASCII text costs an O(1) `isascii`; other text one strict UTF-8 encode, which is a copy of
    the UTF-8 form CPython caches once msgspec has encoded the string (as the previous call's
    request body did for the history). The regex runs only to locate a surrogate found.
    """
    if not isinstance(value, str):
        return f"must be a string, got {type(value).__name__}"
    if value.isascii():
        return None
    try:
        value.encode()
    except UnicodeEncodeError:
        found = _SURROGATE.search(value)
        return f"contains a lone surrogate at index {found.start() if found else '?'}"
    return None


def _text(value: object, where: str) -> str | None:
    why = _why(value)
    return None if why is None else f"{where} {why}"


def _optional_text(value: object, where: str) -> str | None:
    return None if value is None else _text(value, where)


def _temperature(value: object) -> str | None:
    if value is None:
        return None
    if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
        return None
    shown = repr(value) if isinstance(value, (int, float)) else type(value).__name__
    return f"temperature must be a finite number, got {shown}"


def _max_tokens(value: object) -> str | None:
    if value is None:
        return None
    if type(value) is int and 1 <= value <= MAX_OUTPUT_TOKENS:
        return None
    shown = repr(value) if isinstance(value, (int, float)) else type(value).__name__
    return f"max_tokens must be an integer in 1..{MAX_OUTPUT_TOKENS}, got {shown}"


def _deadline(value: object, field: str) -> str | None:
    if value is None or (type(value) is int and 0 <= value <= MAX_OUTPUT_TOKENS):
        return None
    shown = repr(value) if isinstance(value, (int, float)) else type(value).__name__
    return f"{field} must be an integer of ms in 0..{MAX_OUTPUT_TOKENS} (0 = none), got {shown}"


def _stop(value: object) -> str | None:
    if value is None:
        return None
    if not isinstance(value, tuple):
        return f"stop must be a sequence of strings, got {type(value).__name__}"
    for i, item in enumerate(value):
        if (problem := _text(item, f"stop[{i}]")) is not None:
            return problem
    return None


def _blocks(content: object) -> tuple[str, str] | None:
    """(path below `content`, reason) for the first bad block, tool results included, or None.

    Paths are formatted only on failure (and one per nested tool result): the walk over a long
    history costs a type check and an O(1) `isascii` per ASCII text.
    """
    stack: list[tuple[object, str]] = [(content, "")]
    while stack:
        blocks, at = stack.pop()
        if type(blocks) is not tuple:
            return at, f"must be a sequence of content blocks, got {type(blocks).__name__}"
        for j, block in enumerate(blocks):
            kind = type(block)
            if kind not in _BLOCK_KINDS:  # a subclass is checked as its vocabulary base
                kind = next((k for k in _BLOCK_KINDS if isinstance(block, k)), kind)
            if kind is TextBlock or kind is ReasoningBlock:
                text = block.text
                if type(text) is str and text.isascii():
                    continue
                why = _why(text)
                if why is not None:
                    return f"{at}[{j}].text", why
            elif kind is ToolCallBlock:
                a, b, c = block.id, block.name, block.arguments
                if (
                    type(a) is type(b) is type(c) is str
                    and a.isascii()
                    and b.isascii()
                    and c.isascii()
                ):
                    continue
                for name in ("id", "name", "arguments"):
                    why = _why(getattr(block, name))
                    if why is not None:
                        return f"{at}[{j}].{name}", why
            elif kind is ToolResultBlock:
                why = _why(block.tool_call_id)
                if why is not None:
                    return f"{at}[{j}].tool_call_id", why
                stack.append((block.content, f"{at}[{j}].content"))
            elif kind is ImageBlock:
                if type(block.attachment) is not ImageAttachmentRef:
                    return f"{at}[{j}].attachment", "must be an image attachment reference"
            elif kind is DocumentBlock or kind is AudioBlock:
                if (found := media_problem(block)) is not None:
                    return f"{at}[{j}].{found[0]}", found[1]
            else:
                return f"{at}[{j}]", f"must be a content block, got {kind.__name__}"
    return None


def _messages(value: object) -> str | None:
    if type(value) is not tuple:
        return f"messages must be a sequence of messages, got {type(value).__name__}"
    for i, message in enumerate(value):
        if type(message) is not Message and not isinstance(message, Message):
            return f"messages[{i}] must be a Message, got {type(message).__name__}"
        if message.role not in _ROLES:
            return f"messages[{i}].role must be one of system, user, assistant"
        content: object = message.content
        if type(content) is tuple:  # fast path: plain ASCII text blocks need no more than this
            for block in content:
                kind = type(block)
                if kind is not TextBlock and kind is not ReasoningBlock:
                    break
                text = block.text
                if type(text) is not str or not text.isascii():
                    break
            else:
                continue
        found = _blocks(content)
        if found is not None:
            return f"messages[{i}].content{found[0]} {found[1]}"
    return None


def _tools(value: object) -> str | None:
    if value is None:
        return None
    if not isinstance(value, tuple):
        return f"tools must be a sequence of tool schemas, got {type(value).__name__}"
    for i, tool in enumerate(value):
        where = f"tools[{i}]"
        if not isinstance(tool, ToolSchema):
            return f"{where} must be a ToolSchema, got {type(tool).__name__}"
        problem = _text(tool.name, f"{where}.name") or _text(
            tool.description, f"{where}.description"
        )
        if problem is not None:
            return problem
        try:
            _ENCODE(tool.parameters)
        except UnicodeEncodeError:
            return f"{where}.parameters contains a lone surrogate"
        except (TypeError, ValueError, OverflowError):
            return f"{where}.parameters must be a JSON value"
    return None


def _route(provider: object, model: object) -> str | None:
    if not isinstance(provider, str):  # an empty route is left to the lookup (NO_ADAPTER)
        return f"provider must be a string, got {type(provider).__name__}"
    return _text(model, "model")


def options_problem(options: object) -> str | None:
    """Why `options` cannot be dispatched (the first problem, naming its field), or None."""
    if not isinstance(options, GenerateOptions):
        return f"the request must be a GenerateOptions, got {type(options).__name__}"
    purpose = options.purpose
    return (
        _route(options.provider, options.model)
        or _messages(options.messages)
        or _optional_text(options.system, "system")
        or _tools(options.tools)
        or _temperature(options.temperature)
        or _max_tokens(options.max_tokens)
        or _stop(options.stop)
        or _optional_text(options.reasoning_effort, "reasoning_effort")
        or _optional_text(options.session_id, "session_id")
        or (None if purpose is None or purpose in _PURPOSES else "purpose is not a known purpose")
        or _deadline(options.timeout_ms, "timeout_ms")
        or _deadline(options.first_token_timeout_ms, "first_token_timeout_ms")
    )


def call_config_problem(config: object) -> str | None:
    """Why `config` cannot be resolved or prepared (naming its field), or None."""
    if not isinstance(config, CallConfig):
        return f"the call config must be a CallConfig, got {type(config).__name__}"
    return (
        _route(config.provider, config.model)
        or _temperature(config.temperature)
        or _max_tokens(config.max_tokens)
        or _stop(config.stop)
        or _optional_text(config.reasoning_effort, "reasoning_effort")
    )
