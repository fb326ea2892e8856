"""Typing helpers shared by every layer."""

from __future__ import annotations

from collections.abc import Coroutine
from typing import Any, TypeAlias, TypeVar

__all__ = ["Coro"]

_T = TypeVar("_T")

Coro: TypeAlias = Coroutine[Any, Any, _T]  # Any: a coroutine's send and yield types are unused
"""A coroutine returning `_T` (what an `async def` call gives)."""
