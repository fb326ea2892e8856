"""Durable agent turns across many workers sharing one log database (SQLite or PostgreSQL).

`TurnQueue` holds submitted turns; `Worker` claims and runs them with the user's agent under
session leases with fencing tokens (`modelwire.session.lease`), so a worker that dies mid-turn
has its turn finished by another, exactly once. `modelwire worker` and `modelwire queue
status|list|submit|wait|cancel` are the commands.
"""

from __future__ import annotations

from .queue import TurnQueue
from .tickets import Claim, QueueCounts, Ticket, TicketRef, TicketStatus
from .worker import AgentFactory, Worker, WorkerStats

__all__ = [
    "AgentFactory",
    "Claim",
    "QueueCounts",
    "Ticket",
    "TicketRef",
    "TicketStatus",
    "TurnQueue",
    "Worker",
    "WorkerStats",
]
