"""`{{fromRequest:<regex>}}` placeholders: entry strings filled from the live request (D14).

The corpus is every string leaf of the live request's messages (depth-first, object fields in
order) joined by newlines. The last match of the pattern wins; capture group 1 substitutes when it
participated, else the whole match. The placeholder ends at the last two braces of a run of `}`,
so a pattern may end with a quantifier such as `{4}`. Patterns are Python regular expressions
(keep fixtures to the subset JavaScript shares).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import msgspec

from ...errors import ErrorCode, HarnessError, LlmError
from ...vocab import Message
from .script import PLACEHOLDER_PREFIX, ReplayEntry

__all__ = ["request_corpus", "resolve_entry", "resolve_text"]

_ENTRY_TYPE: object = ReplayEntry


def request_corpus(messages: Sequence[Message]) -> str:
    """Every string leaf of `messages`, depth-first, joined by `\\n` (non-strings skipped)."""
    leaves: list[str] = []
    stack: list[object] = [msgspec.to_builtins(tuple(messages))]
    while stack:
        node = stack.pop()
        if isinstance(node, str):
            leaves.append(node)
        elif isinstance(node, dict):
            stack.extend(reversed(list(node.values())))
        elif isinstance(node, (list, tuple)):
            stack.extend(reversed(node))
    return "\n".join(leaves)


def _substitute(pattern: str, corpus: str) -> str:
    try:
        compiled = re.compile(pattern)
    except re.error as exc:
        raise HarnessError(
            f"replay: fromRequest has an invalid pattern {pattern!r} ({exc})",
            ErrorCode.INVALID_REPLAY_FILE,
        ) from exc
    last: re.Match[str] | None = None
    for last in compiled.finditer(corpus):  # noqa: B007 - the last match wins
        pass
    if last is None:
        raise LlmError(
            f"replay: fromRequest pattern {pattern!r} matched nothing in the request",
            ErrorCode.REPLAY_MISMATCH,
        )
    if compiled.groups >= 1 and last.group(1) is not None:
        return last.group(1)
    return last.group(0)


def resolve_text(text: str, corpus: str) -> str:
    """`text` with every placeholder replaced (the same string when it has none)."""
    start = text.find(PLACEHOLDER_PREFIX)
    if start < 0:
        return text
    parts: list[str] = []
    pos = 0
    while start >= 0:
        body = start + len(PLACEHOLDER_PREFIX)
        close = text.find("}}", body)
        if close < 0:
            raise HarnessError(
                f"replay: fromRequest placeholder is unterminated in {text!r}",
                ErrorCode.INVALID_REPLAY_FILE,
            )
        end = close
        while end < len(text) and text[end] == "}":
            end += 1
        parts.append(text[pos:start])
        parts.append(_substitute(text[body : end - 2], corpus))
        pos = end
        start = text.find(PLACEHOLDER_PREFIX, pos)
    parts.append(text[pos:])
    return "".join(parts)


def _walk(node: object, corpus: str) -> object:
    if isinstance(node, str):
        return resolve_text(node, corpus)
    if isinstance(node, dict):
        return {key: _walk(value, corpus) for key, value in node.items()}
    if isinstance(node, (list, tuple)):
        return [_walk(value, corpus) for value in node]
    return node


def resolve_entry(entry: ReplayEntry, messages: Sequence[Message]) -> ReplayEntry:
    """`entry` with its placeholders resolved against the live request's messages."""
    resolved = _walk(msgspec.to_builtins(entry), request_corpus(messages))
    return msgspec.convert(resolved, _ENTRY_TYPE)  # type: ignore[no-any-return]
