"""`modelwire queue status|list|submit|wait|cancel|approve|deny`: the turn queue of a log
database from the shell.

The queue (`modelwire.workers.TurnQueue`) lives in a log database workers share: a SQLite file or
PostgreSQL; a `memory:` log is a one-line error (exit code 2). `submit` prints only the ticket id
(`ticket=$(modelwire queue submit …)`), `wait` only the answer on stdout (its state on stderr),
so both compose in pipes. `status` and `wait` do not create a SQLite file that does not exist yet
(it has no tickets).
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, get_args

import msgspec

from ..session import url_secrets
from ..wire.status import redact_secrets
from .chatopts import read_stdin_prompt
from .config import resolve_log_url
from .errors import EXIT_FAILURE, CliError, fail
from .logs import shown_url, sqlite_file

if TYPE_CHECKING:
    from ..workers import QueueCounts, TicketStatus, TurnQueue

__all__ = [
    "cancel_ticket",
    "decide_ticket",
    "list_tickets",
    "open_queue",
    "print_status",
    "queue_url",
    "submit_turn",
    "wait_ticket",
]


def queue_url(option: str | None, *, create: bool = True) -> str:
    """The log URL of `--log` (or its defaults), refusing a log no two workers can share."""
    url = resolve_log_url(option, create=create)
    if url.lower().startswith("memory:"):
        fail(
            f"the turn queue needs a log database its workers share, not {url} (it ends with "
            "the process): pass --log PATH (SQLite) or --log postgresql://HOST/DB"
        )
    return url


def _missing(url: str) -> bool:
    db = sqlite_file(url)
    return db is not None and not db.exists()


async def open_queue(url: str) -> TurnQueue:
    """Open the queue of `url` (creating its tables on first use); a one-line error naming the
    log (without its password) if it cannot be used."""
    from ..workers import TurnQueue

    try:
        return await TurnQueue.open(url)
    except Exception as err:  # ours, the OS's or a driver's (connection refused): bad input
        text = redact_secrets(str(err), url_secrets(url))
    # failed outside the handler: no `__context__` keeps a driver's text quoting the URL
    raise CliError(f"cannot open the turn queue in {shown_url(url)}: {text}")


def _write_json(value: object) -> None:
    sys.stdout.write(msgspec.json.encode(value).decode() + "\n")


def status_lines(counts: QueueCounts) -> list[str]:
    """`queue status` as text: one state per line, the running tickets' workers beside them."""
    workers = ", ".join(f"{w} {n}" for w, n in sorted(counts.by_worker.items()))
    rows = [
        ("queued", counts.queued, ""),
        ("paused", counts.paused, "  (waiting for approvals)" if counts.paused else ""),
        ("running", counts.running, f"  ({workers})" if workers else ""),
        (
            "expired leases",
            counts.expired,
            "  (the next claim takes them over)" if counts.expired else "",
        ),
        ("completed", counts.completed, ""),
        ("failed", counts.failed, ""),
        ("cancelled", counts.cancelled, ""),
    ]
    return [f"{name:<15}{n:>6}{note}" for name, n, note in rows]


async def print_status(*, log_option: str | None, as_json: bool) -> int:
    """Print the queue's counts (`TurnQueue.counts`)."""
    from ..workers import QueueCounts

    url = queue_url(log_option, create=False)
    if _missing(url):
        counts = QueueCounts(queued=0, running=0, completed=0, failed=0, by_worker={}, expired=0)
    else:
        async with await open_queue(url) as queue:
            counts = await queue.counts()
    if as_json:
        _write_json(counts)
    else:
        sys.stdout.write("".join(line + "\n" for line in status_lines(counts)))
    return 0


async def submit_turn(
    session_id: str, text: str | None, *, log_option: str | None, as_json: bool
) -> int:
    """Queue a turn of `session_id` with `text` (else stdin); prints the ticket id."""
    if text is None:
        text = read_stdin_prompt()
        if text is None:
            fail("no text to submit: pass TEXT or pipe it on stdin")
    url = queue_url(log_option)
    async with await open_queue(url) as queue:
        ticket = await queue.submit(session_id, text)
    if as_json:
        _write_json(ticket)
    else:
        sys.stdout.write(f"{ticket.id}\n")
    return 0


def _story(status: TicketStatus) -> str:
    """How a ticket ended, in one line."""
    parts = [f"{status.id} {status.state}"]
    if status.reason and status.reason != status.state:
        parts[0] += f" ({status.reason})"
    parts.append(f"session {status.session_id}")
    if status.worker:
        parts.append(f"worker {status.worker}")
    if status.claims > 1:
        parts.append(f"claimed {status.claims} times (taken over)")
    return " · ".join(parts)


async def wait_ticket(
    ticket: str, *, timeout_s: float | None, log_option: str | None, as_json: bool
) -> int:
    """Wait for `ticket` to end; the answer on stdout, exit 1 if the turn failed."""
    from ..workers.tickets import no_ticket

    url = queue_url(log_option, create=False)
    if _missing(url):
        raise no_ticket(ticket, url)
    async with await open_queue(url) as queue:
        status = await queue.wait(ticket, timeout_s=timeout_s)
        if status.state == "paused" and not as_json:
            message = await how_to_decide(url, status, queue_url_option=log_option)
            fail(message, exit_code=EXIT_FAILURE, code="TURN_PAUSED")
    failed = status.state != "completed"
    if as_json:
        _write_json(status)
        return EXIT_FAILURE if failed else 0
    if status.output:
        sys.stdout.write(status.output if status.output.endswith("\n") else status.output + "\n")
        sys.stdout.flush()
    if failed:
        why = f": {status.error}" if status.error else ""
        reason = status.reason or "unknown"
        fail(f"ticket {ticket!r} {status.state} ({reason}){why}", exit_code=EXIT_FAILURE)
    sys.stderr.write(_story(status) + "\n")
    return 0


async def list_tickets(
    *,
    states: tuple[str, ...],
    session_id: str | None,
    limit: int,
    log_option: str | None,
    as_json: bool,
) -> int:
    """Print the most recent tickets (oldest first): id, state, session, worker, claims."""
    from ..workers.tickets import State

    known = get_args(State)
    for state in states:
        if state not in known:
            fail(f"--state {state!r}: expected one of {', '.join(known)}")
    url = queue_url(log_option, create=False)
    rows: list[TicketStatus] = []
    if not _missing(url):
        async with await open_queue(url) as queue:
            rows = await queue.tickets(states=states, session_id=session_id, limit=limit)
    if as_json:
        _write_json(rows)
        return 0
    lines = [f"{'TICKET':<35} {'STATE':<10} {'SESSION':<24} WORKER"]
    for row in rows:
        worker = row.worker or "–"
        taken = f" (claimed {row.claims} times)" if row.claims > 1 else ""
        lines.append(f"{row.id:<35} {row.state:<10} {row.session_id:<24} {worker}{taken}")
    sys.stdout.write("".join(line + "\n" for line in lines))
    return 0


async def cancel_ticket(ticket: str, *, log_option: str | None, as_json: bool) -> int:
    """Cancel `ticket`: queued ends cancelled now; running is stopped by its worker."""
    from ..workers.tickets import no_ticket

    url = queue_url(log_option, create=False)
    if _missing(url):
        raise no_ticket(ticket, url)
    async with await open_queue(url) as queue:
        status = await queue.cancel(ticket)
    if as_json:
        _write_json(status)
    elif status.state == "cancelling":
        sys.stdout.write(f"{status.id} cancelling\n")
        sys.stderr.write(
            f"worker {status.worker} cancels its turn at its next poll; "
            f"`modelwire queue wait {status.id}` returns once it ended cancelled\n"
        )
    else:
        sys.stdout.write(f"{status.id} cancelled\n")
    return 0


async def how_to_decide(url: str, status: TicketStatus, *, queue_url_option: str | None) -> str:
    """What a paused ticket waits for, and the commands that decide it."""
    from ..agent.approval import approval_state
    from ..session import open_log

    log = await open_log(url)
    try:
        waiting = (await approval_state(log, status.session_id)).undecided
    finally:
        await log.close()
    where = f" --log {shown_url(queue_url_option)}" if queue_url_option else ""
    lines = [f"ticket {status.id!r} paused: its turn waits for a person's decision on"]
    for call in waiting:
        lines.append(f"  {call.call_id}: {call.tool} {call.arguments}")
    lines.append(
        f"decide each with `modelwire queue approve{where} {status.id} CALL_ID` or "
        f"`modelwire queue deny{where} {status.id} CALL_ID --reason TEXT`; a worker then "
        "resumes the turn"
    )
    return "\n".join(lines)


async def decide_ticket(
    ticket: str,
    call_id: str,
    approve: bool,
    *,
    reason: str | None,
    log_option: str | None,
    as_json: bool,
) -> int:
    """Approve or deny `call_id` of paused `ticket` (`TurnQueue.decide`), by this user."""
    import getpass
    import socket

    from ..workers.tickets import no_ticket

    url = queue_url(log_option, create=False)
    if _missing(url):
        raise no_ticket(ticket, url)
    by = f"{getpass.getuser()}@{socket.gethostname()} (modelwire queue)"
    async with await open_queue(url) as queue:
        decision = await queue.decide(ticket, call_id, approve, reason, by=by)
        status = await queue.status(ticket)
    if as_json:
        _write_json({"decision": decision, "ticket": status})
        return 0
    verb = "approved" if decision.approve else "denied"
    sys.stdout.write(f"{decision.call_id} {verb}\n")
    if status.state == "queued":
        sys.stderr.write(f"every call of {ticket} is decided: a worker resumes its turn\n")
    elif status.state == "paused":
        sys.stderr.write(f"{ticket} still waits for other decisions (`modelwire queue wait`)\n")
    return 0
