"""Strict replays: the live request must equal the recorded one, else `REPLAY_MISMATCH` with a diff.

Compared: the call config (provider, model, effort, temperature, max tokens, stop), the system
prompt, the tools (in order) and the messages by role, content and source. Message ids are fresh
on every run and never compared.
"""

from __future__ import annotations

import difflib
from typing import Final

import msgspec

from ...errors import ErrorCode, LlmError
from ...vocab import CallConfig, GenerateOptions, call_config_of
from .script import RecordedRequest

__all__ = ["check_request"]

_ENCODER: Final = msgspec.json.Encoder()
_DIFF_LIMIT: Final = 60
_CONFIG: Final = msgspec.json.Decoder(CallConfig)


def _config(config: CallConfig) -> object:
    """The config as the log would read it back (so `1` and `1.0` compare equal)."""
    return msgspec.to_builtins(_CONFIG.decode(_ENCODER.encode(config)))


def _render(
    config: object, system: str | None, tools: object, messages: list[dict[str, object]]
) -> list[str]:
    view = {"config": config, "system": system, "tools": tools, "messages": messages}
    text = msgspec.json.format(_ENCODER.encode(view), indent=2).decode()
    return text.splitlines()


def _messages(request: RecordedRequest | GenerateOptions) -> list[dict[str, object]]:
    return [
        {
            "role": m.role,
            "content": msgspec.to_builtins(m.content),
            "source": msgspec.to_builtins(m.source),
        }
        for m in request.messages
    ]


def check_request(recorded: RecordedRequest, options: GenerateOptions, *, what: str) -> None:
    """Raise `LlmError` `REPLAY_MISMATCH` naming `what` when `options` differs from `recorded`.

    Without a recorded header only the messages are compared.
    """
    live_messages = _messages(options)
    recorded_messages = _messages(recorded)
    header = recorded.header
    if header is None:
        live = _render(None, None, None, live_messages)
        expected = _render(None, None, None, recorded_messages)
    else:
        live = _render(
            _config(call_config_of(options)),
            options.system,
            msgspec.to_builtins(options.tools),
            live_messages,
        )
        expected = _render(
            _config(header.config),
            header.system,
            msgspec.to_builtins(header.tools),
            recorded_messages,
        )
    if live == expected:
        return
    diff = list(difflib.unified_diff(expected, live, "recorded", "live", n=2, lineterm=""))
    if len(diff) > _DIFF_LIMIT:
        diff = [*diff[:_DIFF_LIMIT], f"... ({len(diff) - _DIFF_LIMIT} more diff lines)"]
    raise LlmError(
        f"replay: the request of {what} differs from the recording (strict mode):\n"
        + "\n".join(diff),
        ErrorCode.REPLAY_MISMATCH,
    )
