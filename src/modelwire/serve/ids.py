"""Ids the gateway mints per request (response ids, session ids): a random 64-bit prefix drawn
once per process (again in a forked child) plus a counter, so they are unique across the
processes sharing a log without a call into the OS's random source per request."""

from __future__ import annotations

import itertools
import os
import secrets

__all__ = ["next_id"]

_state: list[str] = [secrets.token_hex(8)]
_counter = itertools.count(1)


def _reseed() -> None:
    _state[0] = secrets.token_hex(8)


os.register_at_fork(after_in_child=_reseed)


def next_id(prefix: str) -> str:
    """`prefix` + this process's random part + the next count."""
    return f"{prefix}{_state[0]}{next(_counter):x}"
