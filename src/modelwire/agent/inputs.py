"""What a turn starts with, and the user message it becomes when it enters the session."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeAlias

from ..errors import ErrorCode, HarnessError
from ..vocab import ContentBlock, Message
from ..vocab.messages import user_message

__all__ = ["UserInput", "as_user_message"]

UserInput: TypeAlias = str | Message | Sequence[ContentBlock] | None
"""What a turn starts with: text, a ready user message, content blocks, or nothing (inbox only)."""


def as_user_message(content: UserInput) -> Message | None:
    """The user message `content` stands for (None for nothing); another role is `INVALID_ARGS`."""
    if content is None:
        return None
    if isinstance(content, Message):
        if content.role != "user":
            raise HarnessError(
                f"turn input must be a user message, got role {content.role!r}",
                ErrorCode.INVALID_ARGS,
            )
        return content
    return user_message(content)
