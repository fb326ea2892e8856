"""The one redaction point for what a provider says about a *successful* response.

A failure's fields are scrubbed of the request's credentials (`status.redact_failure`); a
success carries provider-supplied metadata too — the response id, the model name the provider
reports, the labels of parts it did not know, opaque parts kept for replay — and all of it ends
in the replay envelope of the finish chunk, from where it reaches the session log, the export,
the inspector, ``sessions show --json``, the span attributes ``gen_ai.response.id`` /
``gen_ai.response.model`` and the metrics. Every adapter builds its envelope through
`redact_metadata`, so an echoing provider or proxy cannot turn a key into a stored fact:

* ``response_id`` and ``response_model`` are dropped when they carry one of the request's
  credentials or anything shaped like an API key or Bearer token (`status.redact_secrets`): a
  redacted id is useless, and telemetry then omits the attribute;
* every other string anywhere in the envelope has each credential (in any letter case) replaced
  by ``[redacted]``. Only the exact credentials: key *shapes* are not looked for there, since an
  opaque replay blob (a signature, encrypted reasoning) may contain one by chance, and breaking
  it would break the next request.

A tool call's id is provider metadata too, and it travels further: into the tool-call chunks
and block, the log, the ``gen_ai.tool.call.id`` span attribute and the next request. One that
carries a credential (or a key-shaped text) becomes ``call_redacted_<block index>``
(`redact_call_id`, called where the translators open a tool call).

A model listing (`GET /models`, model discovery) is provider metadata as well: a listed model
whose id carries a credential is left out, a name that does is dropped (`carries_secret`: the
exact credentials only, since a model id may well be shaped like ``key-value-…``).

Headers of a successful response are read only for rate limits (numbers) and never stored, and
fields a translator does not keep (``system_fingerprint``, ``created``) never reach a chunk.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Final

import msgspec

from ..vocab import ReplayEnvelope
from ..vocab.json import JsonValue
from .status import redact_secrets

__all__ = ["NAMED_FIELDS", "carries_secret", "redact_call_id", "redact_metadata"]

NAMED_FIELDS: Final = ("response_id", "response_model")
"""The response-level facts dropped when they carry a credential (or a key-shaped text)."""

_REDACTED: Final = "[redacted]"


def _walk(value: JsonValue, pattern: re.Pattern[str]) -> JsonValue:
    if isinstance(value, str):
        return pattern.sub(_REDACTED, value)
    if isinstance(value, Mapping):
        return {key: _walk(item, pattern) for key, item in value.items()}
    if isinstance(value, tuple | list):
        return [_walk(item, pattern) for item in value]
    return value


def _mentions(text: str, secrets: tuple[str, ...]) -> bool:
    for secret in secrets:
        escaped = msgspec.json.encode(secret).decode()[1:-1].lower()
        if secret.lower() in text or escaped in text:
            return True
    return False


def redact_metadata(
    envelope: ReplayEnvelope | None, secrets: Iterable[str]
) -> ReplayEnvelope | None:
    """`envelope` with no credential in it (see the module docstring); `envelope` itself when
    nothing had to change, None when nothing is left of it."""
    if envelope is None:
        return None
    kept = tuple(sorted({s for s in secrets if s}, key=len, reverse=True))
    response: JsonValue = envelope.response
    blocks = envelope.blocks
    changed = False
    if isinstance(response, Mapping):
        dropped = [
            name
            for name in NAMED_FIELDS
            if isinstance(found := response.get(name), str) and redact_secrets(found, kept) != found
        ]
        if dropped:
            response = {k: v for k, v in response.items() if k not in dropped}
            changed = True
    if kept and _mentions(msgspec.json.encode((response, blocks)).decode().lower(), kept):
        pattern = re.compile("|".join(re.escape(s) for s in kept), re.IGNORECASE)
        response = _walk(response, pattern)
        blocks = None if blocks is None else tuple(_walk(list(blocks), pattern))
        changed = True
    if not changed:
        return envelope
    if not response and not blocks:
        return None
    return ReplayEnvelope(response, blocks)


def redact_call_id(call_id: str, secrets: Iterable[str], index: int) -> str:
    """A provider's tool-call id, or ``call_redacted_<index>`` (`index`: the call's block index,
    unique in its response) when it carries one of `secrets` or a key-shaped text."""
    if not call_id or redact_secrets(call_id, tuple(secrets)) == call_id:
        return call_id
    return f"call_redacted_{index}"


def carries_secret(text: str, secrets: Iterable[str]) -> bool:
    """Whether `text` contains one of `secrets` (in any letter case)."""
    lowered = text.lower()
    return any(secret and secret.lower() in lowered for secret in secrets)
