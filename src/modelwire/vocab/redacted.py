"""Reprs that hide credentials: for every struct that holds an API key, credential-bearing
headers or an environment mapping.

A struct lists the fields to hide once (a ``_hidden_fields`` method returning field → stand-in)
and defines ``__repr__`` with `hidden_repr` and ``__rich_repr__`` with `hidden_rich_repr` (rich's
pretty printer asks msgspec structs for ``__rich_repr__``, not ``__repr__``). Stand-ins keep the
shape useful for debugging — whether a key is set, which header names are sent, how many
variables an environment holds — and never a value.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Final

import msgspec

__all__ = [
    "SECRET",
    "Hidden",
    "hidden",
    "hidden_env",
    "hidden_headers",
    "hidden_repr",
    "hidden_rich_repr",
    "hidden_settings",
]


class Hidden:
    """A stand-in whose repr is fixed text (``'***'``, ``<3 variables>``)."""

    __slots__ = ("_text",)

    def __init__(self, text: str) -> None:
        self._text = text

    def __repr__(self) -> str:
        return self._text


SECRET: Final = Hidden("'***'")
"""What a hidden value shows."""

_SECRET_KEYS: Final = frozenset({"api_key", "apikey", "password", "secret", "token"})


def hidden(value: object) -> object:
    """None stays None (the repr still says "no key"); any other value shows as ``'***'``."""
    return None if value is None else SECRET


def hidden_env(env: Mapping[str, str] | None) -> object:
    """An environment mapping as ``<N variables>`` (None stays None)."""
    if env is None:
        return None
    try:
        count = len(env)
    except Exception:  # an exotic mapping: still never show it
        return Hidden("<environment>")
    return Hidden(f"<{count} variables>")


def hidden_headers(headers: Iterable[tuple[str, str]] | Mapping[str, str] | None) -> object:
    """Headers with every value hidden, names kept (the same container shape: dict or tuple)."""
    if headers is None:
        return None
    if isinstance(headers, Mapping):
        return {str(name): SECRET for name in headers}
    return tuple((name, SECRET) for name, _ in headers)


def hidden_settings(value: object) -> object:
    """A settings tree (mappings, lists) with credential-bearing entries hidden: the values of
    ``api_key``/``password``/``token``/``secret`` keys and of every ``headers`` entry."""
    if isinstance(value, Mapping):
        out: dict[object, object] = {}
        for key, item in value.items():
            name = str(key).lower()
            if name in _SECRET_KEYS:
                out[key] = hidden(item)
            elif name == "headers" and isinstance(item, Mapping):
                out[key] = hidden_headers(item)
            elif name == "headers" and item is not None:
                out[key] = SECRET
            else:
                out[key] = hidden_settings(item)
        return out
    if isinstance(value, (list, tuple)):
        return type(value)(hidden_settings(item) for item in value)
    return value


def _fields(value: msgspec.Struct, shown: Mapping[str, object]) -> Iterator[tuple[str, object]]:
    for name in value.__struct_fields__:
        yield name, (shown[name] if name in shown else getattr(value, name))


def hidden_repr(value: msgspec.Struct, shown: Mapping[str, object]) -> str:
    """``Name(field=..., ...)`` like msgspec's own repr, with `shown` replacing those fields."""
    inner = ", ".join(f"{name}={item!r}" for name, item in _fields(value, shown))
    return f"{type(value).__name__}({inner})"


def hidden_rich_repr(
    value: msgspec.Struct, shown: Mapping[str, object]
) -> list[tuple[str, object]]:
    """The ``__rich_repr__`` items of `value` with `shown` replacing those fields."""
    return list(_fields(value, shown))
