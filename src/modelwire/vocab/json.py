"""Immutable JSON values: opaque adapter-private data (replay state, tool schemas) deep-frozen on entry."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NoReturn, TypeAlias

__all__ = ["FrozenDict", "JsonValue", "freeze_json", "thaw_json"]

JsonValue: TypeAlias = Any
"""A lossless JSON value; after `freeze_json`, objects are `FrozenDict` and arrays are tuples."""


class FrozenDict(dict[str, Any]):
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
    # Pass 1: walk containers depth-first, recording them in pre-order with their children.
    order: list[tuple[object, list[object]]] = []
    seen: set[int] = set()
    stack: list[object] = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, _SCALARS) or id(item) in seen:
            continue
        seen.add(id(item))
        if isinstance(item, Mapping):
            children = list(item.values())
        elif isinstance(item, (list, tuple)):
            children = list(item)
        else:
            raise TypeError(f"not a JSON value: {type(item).__name__}")
        order.append((item, children))
        stack.extend(children)
    # Pass 2: build frozen twins bottom-up (reverse pre-order sees children before parents).
    built: dict[int, object] = {}
    for item, children in reversed(order):
        frozen = [c if isinstance(c, _SCALARS) else built[id(c)] for c in children]
        if isinstance(item, Mapping):
            built[id(item)] = FrozenDict(zip((str(k) for k in item), frozen, strict=True))
        else:
            built[id(item)] = tuple(frozen)
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


def thaw_json(value: JsonValue) -> Any:
    """Return a plain mutable copy (dicts and lists) of a frozen JSON value."""
    if isinstance(value, Mapping):
        return {k: thaw_json(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [thaw_json(v) for v in value]
    return value
