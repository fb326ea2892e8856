"""Immutable JSON values: opaque adapter-private data (replay state, tool schemas) deep-frozen on entry."""

from __future__ import annotations

import re
from collections.abc import Mapping
from itertools import accumulate
from operator import sub
from typing import Any, Final, NoReturn, TypeAlias

__all__ = [
    "MAX_JSON_DEPTH",
    "MAX_SAFE_INT",
    "FrozenDict",
    "JsonValue",
    "freeze_json",
    "json_nesting_exceeds",
    "thaw_json",
]

JsonValue: TypeAlias = Any  # Any: JSON is recursive and open; msgspec validates the shape
"""A lossless JSON value; after `freeze_json`, objects are `FrozenDict` and arrays are tuples."""


class FrozenDict(dict[str, JsonValue]):
    """A `dict` that refuses mutation and hashes by content; msgspec encodes it as a JSON object."""

    __slots__ = ()

    def _refuse(self, *args: object, **kwargs: object) -> NoReturn:
        raise TypeError("FrozenDict is immutable")

    __setitem__ = _refuse
    __delitem__ = _refuse
    clear = _refuse
    pop = _refuse
    popitem = _refuse
    setdefault = _refuse
    update = _refuse
    __ior__ = _refuse

    def __hash__(self) -> int:  # type: ignore[override]
        return hash(frozenset(self.items()))

    def __copy__(self) -> FrozenDict:
        return self

    def __deepcopy__(self, memo: object) -> FrozenDict:
        return self


_SCALARS = (str, int, float, bool, type(None))


def freeze_json(value: object) -> JsonValue:
    """Return a deep-frozen, detached copy of a JSON-like value (iterative: no recursion limit).

    Mappings become `FrozenDict`, lists and tuples become tuples; anything else raises `TypeError`.
    """
    if isinstance(value, _SCALARS) or (isinstance(value, FrozenDict) and _is_frozen(value)):
        return value
    if isinstance(value, Mapping):  # the common flat object: no walk needed
        values = list(value.values())
        if all(isinstance(v, _SCALARS) for v in values):
            return FrozenDict(zip((str(k) for k in value), values, strict=True))
    # Iterative post-order walk: a container is built once all its children are, so shared
    # (diamond) sub-values are built once and reused; a container met again while it is still on
    # the current path is a cycle, which JSON cannot express.
    built: dict[int, object] = {}
    on_path: set[int] = set()
    stack: list[tuple[object, list[object] | None]] = [(value, None)]
    while stack:
        item, children = stack.pop()
        if children is not None:
            frozen = [c if isinstance(c, _SCALARS) else built[id(c)] for c in children]
            if isinstance(item, Mapping):
                built[id(item)] = FrozenDict(zip((str(k) for k in item), frozen, strict=True))
            else:
                built[id(item)] = tuple(frozen)
            on_path.discard(id(item))
            continue
        if id(item) in built:
            continue
        if isinstance(item, Mapping):
            children = list(item.values())
        elif isinstance(item, (list, tuple)):
            children = list(item)
        else:
            raise TypeError(f"not a JSON value: {type(item).__name__}")
        on_path.add(id(item))
        stack.append((item, children))
        for child in children:
            if isinstance(child, _SCALARS) or id(child) in built:
                continue
            if id(child) in on_path:
                raise ValueError("not a JSON value: it contains a reference cycle")
            stack.append((child, None))
    return built[id(value)]


def _is_frozen(value: object) -> bool:
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, FrozenDict):
            stack.extend(item.values())
        elif isinstance(item, tuple):
            stack.extend(item)
        elif not (isinstance(item, (str, int, float, bool)) or item is None):
            return False
    return True


def thaw_json(value: JsonValue) -> JsonValue:
    """Return a plain mutable copy (dicts and lists) of a frozen JSON value (iterative)."""
    if isinstance(value, _SCALARS):
        return value
    root: list[JsonValue] = [None]
    stack: list[tuple[object, JsonValue, int | str]] = [(value, root, 0)]
    while stack:
        item, parent, key = stack.pop()
        if isinstance(item, Mapping):
            out: JsonValue = {}
            for k, v in item.items():
                out[k] = None
                stack.append((v, out, k))
        elif isinstance(item, (list, tuple)):
            out = [None] * len(item)
            for idx, v in enumerate(item):
                stack.append((v, out, idx))
        else:
            out = item
        parent[key] = out
    return root[0]


MAX_SAFE_INT: Final = 2**53 - 1
"""The largest integer every JSON consumer represents exactly (IEEE double): the bound of every
integer option and counter that crosses the wire or the log."""

MAX_JSON_DEPTH: Final = 256
"""The deepest JSON nesting modelwire's file loaders accept (256 levels; a session event nests
about 10, tool schemas a few more): checked before a recursive decoder could exhaust the stack."""

# A JSON string, escapes included; an unterminated one runs to the end, so every match attempt
# succeeds and the scan stays linear even on a truncated line.
_STRING: Final = re.compile(rb'"[^"\\]*+(?:\\.[^"\\]*+)*+\\?+(?:"|\Z)', re.DOTALL)
_NOT_BRACKET: Final = bytes(c for c in range(256) if c not in b"[]{}")
_OPENS: Final = bytes.maketrans(b"[]{}", b"\x01\x00\x01\x00")
_CLOSES: Final = bytes.maketrans(b"[]{}", b"\x00\x01\x00\x01")


def json_nesting_exceeds(text: bytes, limit: int) -> bool:
    """True when the JSON `text` nests arrays and objects more than `limit` levels deep.

    Meant to run before a recursive decoder sees untrusted text. Brackets inside strings do not
    count. The scan is a few linear byte passes at C speed (no Python loop per byte); text with
    at most `limit` opening brackets in all is accepted after two `count`s. On text that is not
    valid JSON the depth is only approximate, but it is exact on any valid prefix, which is all a
    decoder recurses into before it fails.
    """
    if text.count(b"[") + text.count(b"{") <= limit:
        return False
    brackets = _STRING.sub(b"", text).translate(None, _NOT_BRACKET)
    if brackets.count(b"[") + brackets.count(b"{") <= limit:
        return False
    opened = accumulate(brackets.translate(_OPENS))
    closed = accumulate(brackets.translate(_CLOSES))
    deepest: int = max(map(sub, opened, closed))  # `operator.sub` is typed loosely
    return deepest > limit
