"""Replay state through a client that only keeps what its protocol has: a minted signature.

An adapter's replay envelope (signatures, item ids, encrypted reasoning) has no place in an
OpenAI or Anthropic reply, but an Anthropic thinking block carries an opaque `signature` the
client must send back unchanged. The gateway puts the whole message's envelope there —
`mwr1.` + base64url of `{provider, model, response, blocks}` — on each thinking block, and reads
it back from the first such block of an assistant message, which then reaches the route that
wrote it with its own replay state (any other route gets it as foreign history, as the runtime's
replay filter decides). A signature that is not one of these is ignored: the message is sent as
plain history.
"""

from __future__ import annotations

import base64
import binascii
from typing import Final

import msgspec

from ..vocab import ModelSource, ReplayEnvelope
from ..vocab.json import JsonValue

__all__ = ["PREFIX", "envelope_of_signature", "mint_signature"]

PREFIX: Final = "mwr1."


class _Minted(msgspec.Struct, frozen=True, omit_defaults=True):
    provider: str
    model: str
    response: JsonValue
    blocks: tuple[JsonValue, ...] | None = None


_DECODER: Final = msgspec.json.Decoder(_Minted)


def mint_signature(provider: str, model: str, envelope: ReplayEnvelope | None) -> str:
    """The signature carrying `envelope` of a message of `provider:model` ('' when none)."""
    if envelope is None:
        return ""
    minted = _Minted(provider, model, envelope.response, envelope.blocks)
    return PREFIX + base64.urlsafe_b64encode(msgspec.json.encode(minted)).decode().rstrip("=")


def envelope_of_signature(signature: str) -> ModelSource | None:
    """The model source a minted signature carries, or None for any other signature."""
    if not signature.startswith(PREFIX):
        return None
    text = signature[len(PREFIX) :]
    try:
        raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
        minted = _DECODER.decode(raw)
    except (binascii.Error, ValueError, msgspec.DecodeError):
        return None
    envelope = ReplayEnvelope(minted.response, minted.blocks)
    return ModelSource(minted.provider, minted.model, envelope)
