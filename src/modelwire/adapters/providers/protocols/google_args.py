"""Vertex AI streamed function-call arguments (``streamFunctionCallArguments``): one call's
arguments object rebuilt from its ``partialArgs`` fragments.

Each fragment names a JSONPath (``$.location``, ``$.items[0].name``, ``$['a b']``) and one
value (``stringValue``, ``numberValue``, ``boolValue`` or ``nullValue``). String fragments at one
path concatenate (kept as pieces and joined once, so a long value costs linear time); any other
value replaces what the path held. The object encodes to compact JSON in key order of first
sight.
"""

from __future__ import annotations

import itertools
import re
from typing import Final, TypeAlias

import msgspec

__all__ = ["PartialArguments", "parse_json_path"]

_SEGMENT: Final = re.compile(
    r"\.(?P<name>[^.\[\]]+)"
    r"|\[(?P<index>\d+)\]"
    r"|\[\s*'(?P<single>[^']*)'\s*\]"
    r'|\[\s*"(?P<double>[^"]*)"\s*\]'
)
_MAX_DEPTH: Final = 64
_MAX_INDEX: Final = 10_000
_ENCODE: Final = msgspec.json.encode

Key: TypeAlias = str | int
"""One step of a path: an object key or an array index."""


class _Pieces:
    """A string value still streaming: its fragments, joined once at the end."""

    __slots__ = ("parts",)

    def __init__(self) -> None:
        self.parts: list[str] = []


def parse_json_path(path: str) -> list[Key] | None:
    """The steps of a JSONPath rooted at ``$`` (None when it is not one this module reads)."""
    if not path.startswith("$"):
        return None
    keys: list[Key] = []
    pos = 1
    while pos < len(path):
        found = _SEGMENT.match(path, pos)
        if found is None or len(keys) >= _MAX_DEPTH:
            return None
        index = found.group("index")
        if index is not None:
            if int(index) > _MAX_INDEX:
                return None
            keys.append(int(index))
        else:
            name = found.group("name") or found.group("single") or found.group("double") or ""
            keys.append(name)
        pos = found.end()
    return keys


def _child(node: dict[str, object] | list[object], key: Key) -> object:
    if isinstance(node, dict):
        return node.get(key) if isinstance(key, str) else None
    return node[key] if isinstance(key, int) and key < len(node) else None


def _put(node: dict[str, object] | list[object], key: Key, value: object) -> bool:
    if isinstance(node, dict):
        if not isinstance(key, str):
            return False
        node[key] = value
        return True
    if not isinstance(key, int):
        return False
    if key >= len(node):
        node.extend([None] * (key + 1 - len(node)))
    node[key] = value
    return True


class PartialArguments:
    """The arguments object of one streamed call, built fragment by fragment."""

    __slots__ = ("_root",)

    def __init__(self) -> None:
        self._root: dict[str, object] = {}

    def apply(self, path: str, value: object, text: bool) -> bool:
        """Apply one fragment (`text`: a string fragment, appended); False when `path` cannot
        be applied (not a JSONPath, or it walks through a value of the other container kind)."""
        keys = parse_json_path(path)
        if not keys:
            return False
        node: dict[str, object] | list[object] = self._root
        for key, following in itertools.pairwise(keys):
            child = _child(node, key)
            if isinstance(child, (dict, list)):
                node = child
                continue
            fresh: dict[str, object] | list[object] = [] if isinstance(following, int) else {}
            if not _put(node, key, fresh):
                return False
            node = fresh
        last = keys[-1]
        if text:
            current = _child(node, last)
            if not isinstance(current, _Pieces):
                current = _Pieces()
                if not _put(node, last, current):
                    return False
            current.parts.append(value if isinstance(value, str) else "")
            return True
        return _put(node, last, value)

    def json(self) -> str:
        """The arguments as compact JSON (streamed strings joined)."""
        stack: list[dict[str, object] | list[object]] = [self._root]
        while stack:
            node = stack.pop()
            entries: list[tuple[Key, object]] = (
                list(node.items()) if isinstance(node, dict) else list(enumerate(node))
            )
            for key, value in entries:
                if isinstance(value, _Pieces):
                    _put(node, key, "".join(value.parts))
                elif isinstance(value, (dict, list)):
                    stack.append(value)
        return _ENCODE(self._root).decode()
