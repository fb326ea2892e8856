"""Nominal string ids: plain `str` at run time, distinct types for the checker."""

from __future__ import annotations

from typing import NewType

__all__ = [
    "CallId",
    "MessageId",
    "ProviderRequestId",
    "ReasoningEffortId",
    "SessionId",
    "new_message_id",
]

MessageId = NewType("MessageId", str)
"""Stable identity of one message across inbox, log and request boundaries."""
CallId = NewType("CallId", str)
"""Correlates a model tool call with its result."""
ProviderRequestId = NewType("ProviderRequestId", str)
"""Opaque provider request id kept for diagnostics."""
ReasoningEffortId = NewType("ReasoningEffortId", str)
"""Adapter-owned opaque reasoning-effort identifier."""
SessionId = NewType("SessionId", str)
"""Identity of one durable session."""


def new_message_id() -> MessageId:
    """Mint a fresh random RFC-4122 version-4 UUID message id."""
    import uuid  # lazily: uuid costs ~5 ms of `import modelwire`

    return MessageId(str(uuid.uuid4()))
