"""Durable session logs: `open_log(url)` and the `SessionLog` interface with its event types.

URLs: `memory:` (process-local), `sqlite:///path.db` (embedded default, WAL) and
`postgresql://user@host/db` (shared by many processes). Backends other than memory are imported
lazily. Each backend class provides `async classmethod open(url: str) -> Self`.
"""

from __future__ import annotations

from ..errors import ErrorCode, HarnessError
from .events import (
    AbortCause,
    AssistantChunk,
    AssistantMessage,
    EpochHeader,
    Event,
    LlmRetry,
    LlmRetryStarted,
    RequestContext,
    RequestHeader,
    StepEnd,
    StepStart,
    ToolCallRecord,
    ToolDecision,
    ToolResultRecord,
    TurnAborted,
    TurnBlocked,
    TurnCompleted,
    TurnEnd,
    TurnEndReason,
    TurnErrored,
    TurnInterrupted,
    TurnMaxTokens,
    TurnPaused,
    TurnStart,
    UserMessage,
    event_types,
    register_event_type,
)
from .log import SessionInfo, SessionLog
from .memory import MemoryLog
from .urls import redact_url, url_secrets

__all__ = [
    "AbortCause",
    "AssistantChunk",
    "AssistantMessage",
    "EpochHeader",
    "Event",
    "LlmRetry",
    "LlmRetryStarted",
    "MemoryLog",
    "RequestContext",
    "RequestHeader",
    "SessionInfo",
    "SessionLog",
    "StepEnd",
    "StepStart",
    "ToolCallRecord",
    "ToolDecision",
    "ToolResultRecord",
    "TurnAborted",
    "TurnBlocked",
    "TurnCompleted",
    "TurnEnd",
    "TurnEndReason",
    "TurnErrored",
    "TurnInterrupted",
    "TurnMaxTokens",
    "TurnPaused",
    "TurnStart",
    "UserMessage",
    "event_types",
    "open_log",
    "redact_url",
    "register_event_type",
    "url_secrets",
]


async def open_log(url: str) -> SessionLog:
    """Open the session log named by `url` (`memory:`, `sqlite:///path.db`, `postgresql://…`).

    An unknown scheme raises `HarnessError` `LOG_UNAVAILABLE` naming the URL without credentials;
    no failure message, the backends' and their drivers' included, carries the URL's password
    or a credential-looking query value (`redact_url`, `url_secrets`).
    """
    if not isinstance(url, str):
        raise HarnessError(
            f"log URL must be a string, got {type(url).__name__}", ErrorCode.LOG_UNAVAILABLE
        )
    scheme = url.split(":", 1)[0].lower() if ":" in url else ""
    if scheme == "memory" and url.lower() in ("memory:", "memory://"):
        return MemoryLog()
    if scheme == "sqlite":
        from .sqlite import SqliteLog

        return await SqliteLog.open(url)
    if scheme in ("postgresql", "postgres"):
        from .postgres import PostgresLog

        return await PostgresLog.open(url)
    raise HarnessError(
        f"unsupported session log URL {redact_url(url)!r}: expected memory:, "
        "sqlite:///path.db or postgresql://…",
        ErrorCode.LOG_UNAVAILABLE,
    )
