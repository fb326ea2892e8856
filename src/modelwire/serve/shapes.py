"""The client protocols the gateway speaks, each as one `Shape`: how its body is parsed, how an
answer is encoded (streaming and whole), and whose error shape it uses.

Chat Completions and Responses use OpenAI's error shape, Messages Anthropic's (and accepts
`x-api-key`). Response ids are minted per request (`chatcmpl-…`, `msg_…`, `resp_…`); `model`
in a reply is the model the client named.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Protocol as TypingProtocol

from ..assembler import BlockAssembler
from ..vocab import StreamChunk
from .chat_in import parse_chat
from .chat_out import ChatStream, chat_completion
from .ids import next_id
from .messages_in import parse_messages
from .messages_out import MessagesStream, messages_message
from .problems import Protocol
from .replaystate import mint_signature
from .request import GatewayRequest
from .responses_in import parse_responses
from .responses_out import ResponsesStream, responses_object

__all__ = ["CHAT", "MESSAGES", "RESPONSES", "Encoder", "Reply", "Shape"]


class Encoder(TypingProtocol):
    """A streaming encoder: the opening bytes, then the bytes of each chunk."""

    def start(self) -> bytes: ...

    def push(self, chunk: StreamChunk) -> bytes: ...


@dataclass(frozen=True, slots=True)
class Reply:
    """What an encoder needs to know about the reply: its id, the model the client named, the
    route and model that served it, and the request."""

    response_id: str
    model: str
    route: str
    target_model: str
    request: GatewayRequest
    created: int


@dataclass(frozen=True, slots=True)
class Shape:
    """One client protocol (module docstring)."""

    endpoint: str
    protocol: Protocol
    id_prefix: str
    x_api_key: bool
    parse: Callable[[Mapping[str, object]], GatewayRequest]
    encoder: Callable[[Reply], Encoder]
    whole: Callable[[Reply, BlockAssembler], dict[str, object]]

    def reply(self, request: GatewayRequest, route: str, target_model: str) -> Reply:
        """A fresh reply's facts."""
        return Reply(
            next_id(self.id_prefix),
            request.model,
            route,
            target_model,
            request,
            int(time.time()),
        )


def _chat_whole(r: Reply, asm: BlockAssembler) -> dict[str, object]:
    return chat_completion(r.response_id, r.model, r.created, asm.blocks(), asm.finish, asm.usage)


def _messages_whole(r: Reply, asm: BlockAssembler) -> dict[str, object]:
    signature = mint_signature(r.route, r.target_model, asm.replay_state)
    return messages_message(r.response_id, r.model, asm.blocks(), asm.finish, asm.usage, signature)


def _responses_whole(r: Reply, asm: BlockAssembler) -> dict[str, object]:
    return responses_object(r.response_id, r.model, r.created, asm.blocks(), asm.finish, asm.usage)


CHAT = Shape(
    "/v1/chat/completions",
    "openai",
    "chatcmpl-",
    False,
    parse_chat,
    lambda r: ChatStream(
        r.response_id, r.model, r.created, r.request.include_usage, f"{r.route}:{r.target_model}"
    ),
    _chat_whole,
)
MESSAGES = Shape(
    "/v1/messages",
    "anthropic",
    "msg_",
    True,
    parse_messages,
    lambda r: MessagesStream(r.response_id, r.model, r.route, r.target_model),
    _messages_whole,
)
RESPONSES = Shape(
    "/v1/responses",
    "openai",
    "resp_",
    False,
    parse_responses,
    lambda r: ResponsesStream(r.response_id, r.model, r.created, f"{r.route}:{r.target_model}"),
    _responses_whole,
)
