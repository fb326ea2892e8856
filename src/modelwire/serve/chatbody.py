"""The AI SDK's chat request body (`{id, messages}` of UI messages) and its check against the log.

The log is the truth: the messages a client sends before its new (last) user message must be the
session's conversation as the log has it — its user messages' texts exactly, its assistant
messages' texts as the log has them or a prefix of them (a client cut off mid-answer saw less);
reasoning and tool parts are not compared. Consecutive assistant messages of the log are one UI
message (a turn's steps), joined. A session the log does not have yet starts from the client's
messages: its earlier messages are logged as the session's opening (`seed_events`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import msgspec

from ..events import Event, UserMessage
from ..vocab import Message, TextBlock, UserSource
from ..vocab.messages import ModelSource

__all__ = [
    "ChatBody",
    "Decision",
    "UiMessage",
    "UiPart",
    "history_problem",
    "parse_body",
    "parse_decision",
    "seed_messages",
]


class UiPart(msgspec.Struct, frozen=True):
    """A part of a UI message; only text parts are read."""

    type: str
    text: str | None = None


class UiMessage(msgspec.Struct, frozen=True):
    """A UI message as the AI SDK sends it."""

    role: Literal["system", "user", "assistant"]
    parts: tuple[UiPart, ...] = ()
    id: str = ""

    def text(self) -> str:
        return "".join(p.text or "" for p in self.parts if p.type == "text")


class ChatBody(msgspec.Struct, frozen=True):
    """`POST /v1/agents/{name}/chat`: the session id and the conversation ending in the new input."""

    id: str
    messages: tuple[UiMessage, ...]


class Decision(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """`POST .../decisions`: approve or deny one waiting call."""

    call_id: str
    approve: bool
    reason: str | None = None


def parse_body(raw: bytes) -> ChatBody | str:
    """The body, or the reason it is malformed (naming the field)."""
    try:
        body = msgspec.json.decode(raw, type=ChatBody)
    except msgspec.ValidationError as error:
        return f"the chat body is invalid: {error}"
    except msgspec.DecodeError:
        return "the chat body is not JSON"
    if not body.id:
        return "the chat body's `id` (the session) is empty"
    if not body.messages or body.messages[-1].role != "user":
        return "the chat body's `messages` must end with the new user message"
    if not body.messages[-1].text():
        return "the last user message has no text part"
    return body


def parse_decision(raw: bytes) -> Decision | str:
    try:
        return msgspec.json.decode(raw, type=Decision)
    except msgspec.ValidationError as error:
        return f"the decision body is invalid: {error}"
    except msgspec.DecodeError:
        return "the decision body is not JSON"


def _log_conversation(messages: Sequence[Message]) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    for message in messages:
        texts = [b.text for b in message.content if isinstance(b, TextBlock)]
        if message.role == "user" and not texts:
            continue  # a tool results message
        text = "".join(texts)
        if message.role == "assistant" and out and out[-1][0] == "assistant":
            out[-1] = ("assistant", out[-1][1] + text)
        elif message.role in ("user", "assistant"):
            out.append((message.role, text))
    return [(role, text) for role, text in out if role == "user" or text]


def _client_conversation(messages: Sequence[UiMessage]) -> list[tuple[str, str]]:
    out = [(m.role, m.text()) for m in messages if m.role in ("user", "assistant")]
    return [(role, text) for role, text in out if role == "user" or text]


def history_problem(logged: Sequence[Message], sent: Sequence[UiMessage]) -> str | None:
    """Why the client's earlier messages `sent` are not the logged conversation, or None."""
    have = _log_conversation(logged)
    told = _client_conversation(sent)
    if len(told) != len(have):
        return (
            f"the client sent {len(told)} earlier message(s) but the session's log has "
            f"{len(have)}: the log is the conversation's truth (reload it from the stream)"
        )
    for index, ((role, text), (log_role, log_text)) in enumerate(zip(told, have, strict=True)):
        if role != log_role:
            return f"message {index} is {role!r} but the log has {log_role!r} there"
        if role == "user" and text != log_text:
            return f"user message {index} differs from the session's log"
        if role == "assistant" and not log_text.startswith(text):
            return f"assistant message {index} differs from the session's log"
    return None


def seed_messages(sent: Sequence[UiMessage]) -> list[msgspec.Struct]:
    """The opening `user/message` events of a new session whose client sent earlier messages
    (assistant texts become user-visible history as the model's own, without a route)."""
    out: list[msgspec.Struct] = []
    for index, message in enumerate(sent):
        text = message.text()
        if message.role == "user" and text:
            content = (TextBlock(text),)
            out.append(UserMessage(Message(f"seed-{index}", "user", content, UserSource())))
        elif message.role == "assistant" and text:
            source = ModelSource(provider="client", model="client")
            assistant = Message(f"seed-{index}", "assistant", (TextBlock(text),), source)
            out.append(UserMessage(assistant))
    return out


def logged_messages(events: Sequence[Event]) -> list[Message]:
    """The conversation messages of `events` (user and assistant), in order."""
    from ..agent.request import derive_messages

    return list(derive_messages(events))
