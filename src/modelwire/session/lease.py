"""Session leases with fencing: who may write a session now, and the token that proves it.

A writer takes a *lease* on a session before a turn (`SessionLog.acquire_lease`): an owner id,
an expiry and a fencing token that grows by one with every new holder. While an instance of a log
holds a lease (it acquired it, or was told of one taken elsewhere with `hold`), every append of
that session checks the token in the same transaction as the insert: when the stored lease has
another token (taken over) or has expired, the append writes nothing and raises `LEASE_LOST` —
even from a process that was paused and wakes up later. A lost lease stays fenced until released,
so a writer that lost its lease can never fall back to writing unfenced.

The rules are pure functions of the stored `LeaseRow` and the log's clock (`decide_acquire`,
`decide_renew`, `decide_release`, `fence_error`); each backend runs them inside one transaction
that holds the session's write lock (`_lease_txn`), the same lock its appends take, so a takeover
waits for any open append transaction of the session and every append sees the newest holder.
Clocks only decide *when* a lease may be taken over; the token alone keeps writers apart, so a
skewed clock can delay a takeover or cause a needless one, never two writers.

A holder on this machine whose process is gone (owner ids `host:pid:…`, `default_owner()`) need
not be waited for: `decide_acquire` takes its live lease at once, as it would an expired one. Nor
need a holder of this very process whose turn of the session is not running any more (e.g. it
ended while the database was down, so its release was lost): a turn marks itself `running_here`
while it runs. A pid reused by another process only means waiting for the expiry; an owner wrongly
judged gone is fenced out like any other — its appends get `LEASE_LOST` — so the shortcut never
admits two writers.
"""

from __future__ import annotations

import contextlib
import math
import os
import socket
from collections.abc import Callable, Iterator
from typing import Final

import msgspec

from ..errors import ErrorCode, HarnessError

__all__ = [
    "Lease",
    "LeaseRow",
    "check_deletable",
    "check_lease_ms",
    "decide_acquire",
    "decide_release",
    "decide_renew",
    "default_owner",
    "fence_error",
    "holder_gone",
    "lease_lost",
    "running_here",
]

RELEASED: Final = 0
"""The `expires_ms` of a released lease (its token is kept, so tokens keep growing)."""


class LeaseRow(msgspec.Struct, frozen=True):
    """A stored lease: the session, its holder, the fencing token and the expiry (epoch ms;
    `0` once released)."""

    session_id: str
    owner: str
    token: int
    expires_ms: int

    def live(self, now_ms: int) -> bool:
        """True while the lease is held (not released, not expired)."""
        return self.expires_ms > now_ms


class Lease(msgspec.Struct, frozen=True):
    """A lease held by this writer: `row` as stored when it was taken or renewed, and `prior`,
    the lease it replaced (None: the session never had one) — its holder is gone."""

    row: LeaseRow
    prior: LeaseRow | None = None

    @property
    def session_id(self) -> str:
        """The leased session."""
        return self.row.session_id

    @property
    def owner(self) -> str:
        """The holder's owner id."""
        return self.row.owner

    @property
    def token(self) -> int:
        """The fencing token."""
        return self.row.token

    @property
    def expires_ms(self) -> int:
        """When the lease expires unless renewed (epoch ms, by the log's clock)."""
        return self.row.expires_ms


def _positive_ms(value: object, text: str, code: ErrorCode) -> float:
    """`value` when it is a finite number > 0 (not a bool); else `code`, `text` naming it."""
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or not (math.isfinite(value) and value > 0)
    ):
        raise HarnessError(f"{text} must be a positive number of milliseconds, got {value!r}", code)
    return float(value)


def check_lease_ms(lease_ms: float, renew_ms: float | None, *, where: str = "lease_ms") -> float:
    """The renewal interval for a lease of `lease_ms` (default a third of it); a lease not longer
    than its renewal interval, or a non-positive or non-finite value, is `INVALID_CONFIG` naming
    the values."""
    lease = _positive_ms(lease_ms, where, ErrorCode.INVALID_CONFIG)
    renew = lease / 3 if renew_ms is None else renew_ms
    renew = _positive_ms(renew, "the lease renewal interval", ErrorCode.INVALID_CONFIG)
    if renew >= lease:
        raise HarnessError(
            f"{where} ({lease:g} ms) must be longer than its renewal interval ({renew:g} ms): "
            "the lease would expire before it is renewed",
            ErrorCode.INVALID_CONFIG,
        )
    return renew


def _check_owner(owner: str) -> str:
    if not isinstance(owner, str) or not owner or len(owner) > 200:
        raise HarnessError(
            f"a lease owner must be a non-empty string of at most 200 characters, got {owner!r}",
            ErrorCode.INVALID_ARGS,
        )
    return owner


def _ttl(ttl_ms: float) -> int:
    return max(1, math.ceil(_positive_ms(ttl_ms, "a lease duration", ErrorCode.INVALID_ARGS)))


def lease_held(row: LeaseRow, now_ms: int) -> HarnessError:
    """`TURN_IN_PROGRESS`: another owner holds a live lease on the session."""
    return HarnessError(
        f"session {row.session_id!r} is leased by {row.owner!r} (token {row.token}) for another "
        f"{row.expires_ms - now_ms} ms: its writer is alive, so its turn is neither resumed nor "
        "closed by another (it is taken over only once the lease expires)",
        ErrorCode.TURN_IN_PROGRESS,
    )


def check_deletable(session_id: str, row: LeaseRow | None, events: int, now_ms: int) -> None:
    """Before deleting a session of `events` events with lease `row`: `SESSION_NOT_FOUND` when
    it has none, `TURN_IN_PROGRESS` while a writer's lease is live."""
    if events == 0:
        raise HarnessError(f"session {session_id!r} does not exist", ErrorCode.SESSION_NOT_FOUND)
    if row is not None and row.expires_ms > now_ms:
        raise lease_held(row, now_ms)


def lease_lost(session_id: str, token: int, row: LeaseRow | None, now_ms: int) -> HarnessError:
    """`LEASE_LOST` naming what became of the lease with `token`."""
    if row is None:
        what = "the session has no lease"
    elif row.token != token:
        what = f"it was taken over by {row.owner!r} (token {row.token})"
    elif row.expires_ms == RELEASED:
        what = "it was released"
    else:
        what = f"it expired {now_ms - row.expires_ms} ms ago"
    return HarnessError(
        f"session {session_id!r}: the lease with token {token} is lost ({what}); nothing was "
        "written",
        ErrorCode.LEASE_LOST,
    )


def fence_error(
    session_id: str, token: int, row: LeaseRow | None, now_ms: int
) -> HarnessError | None:
    """The `LEASE_LOST` refusal of an append fenced by `token`, or None when the lease holds."""
    if row is not None and row.token == token and row.live(now_ms):
        return None
    return lease_lost(session_id, token, row, now_ms)


Decision = Callable[[LeaseRow | None, int], LeaseRow | None]
"""What a backend's `_lease_txn` runs under the session's lock: the stored row and the log's
clock in, the row to store out (None: store nothing); may raise to store nothing."""


def default_owner() -> str:
    """A lease owner id unique to this process and call: `host:pid:random`."""
    return f"{socket.gethostname()[:60]}:{os.getpid()}:{os.urandom(4).hex()}"


_RUNNING: dict[tuple[str, str], int] = {}  # (owner, session) -> its turns running in this process


@contextlib.contextmanager
def running_here(owner: str, session_id: str) -> Iterator[None]:
    """Mark a turn of `session_id` under `owner` as running in this process, for the duration."""
    key = (owner, session_id)
    _RUNNING[key] = _RUNNING.get(key, 0) + 1
    try:
        yield
    finally:
        left = _RUNNING.pop(key) - 1
        if left:
            _RUNNING[key] = left


def holder_gone(owner: str, session_id: str | None = None) -> bool:
    """True when `owner` (`host:pid:…`) names a process of this machine that no longer exists,
    or this very process while no turn of `session_id` (if given) runs under `owner` here."""
    host, _, rest = owner.partition(":")
    pid_text = rest.partition(":")[0]
    if host != socket.gethostname()[:60] or not pid_text.isdigit():
        return False
    pid = int(pid_text)
    if pid == os.getpid():
        return session_id is not None and (owner, session_id) not in _RUNNING
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except OSError:  # exists, but is not ours to signal
        return False
    return False


def decide_acquire(
    session_id: str, owner: str, ttl_ms: float, gone: Callable[[str], bool] | None = None
) -> Decision:
    """Take the lease: free, released, expired or held by a holder `gone` (default
    `holder_gone`, see the module docstring) → the next token; held by `owner` itself → renewed
    under the same token; live under another owner → `TURN_IN_PROGRESS`."""
    _check_owner(owner)
    ttl = _ttl(ttl_ms)
    if gone is None:
        gone = lambda holder: holder_gone(holder, session_id)  # noqa: E731

    def decide(row: LeaseRow | None, now: int) -> LeaseRow:
        if row is None:
            return LeaseRow(session_id, owner, 1, now + ttl)
        if row.live(now) and not (row.owner != owner and gone(row.owner)):
            if row.owner != owner:
                raise lease_held(row, now)
            return LeaseRow(session_id, owner, row.token, now + ttl)
        return LeaseRow(session_id, owner, row.token + 1, now + ttl)

    return decide


def decide_renew(lease: Lease, ttl_ms: float) -> Decision:
    """Extend a lease still held under its token; otherwise `LEASE_LOST` (an expired lease is
    lost even when nobody took it over: its writer may have been presumed dead)."""
    ttl = _ttl(ttl_ms)

    def decide(row: LeaseRow | None, now: int) -> LeaseRow:
        error = fence_error(lease.session_id, lease.token, row, now)
        if error is not None:
            raise error
        return LeaseRow(lease.session_id, lease.owner, lease.token, now + ttl)

    return decide


def decide_release(lease: Lease) -> Decision:
    """Give the lease up (it may be taken at once); a lease already lost is left alone."""

    def decide(row: LeaseRow | None, now: int) -> LeaseRow | None:
        if row is None or row.token != lease.token:
            return None
        return LeaseRow(lease.session_id, row.owner, row.token, RELEASED)

    return decide
