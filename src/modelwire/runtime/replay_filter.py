"""The same-adapter-instance replay filter (spec/core.md §6.12).

Replay state is adapter-private: an assistant message keeps its `source.replay_state` only when
the adapter currently registered for its historical route is the very instance that serves the
request. Otherwise the state is stripped (same id, role and content) before dispatch.
"""

from __future__ import annotations

from collections.abc import Mapping

import msgspec

from ..vocab import GenerateOptions, Message, ModelSource
from .adapter import LlmAdapter
from .registry import Route

__all__ = ["filter_replay_state"]


def filter_replay_state(
    options: GenerateOptions, target: LlmAdapter, routes: Mapping[str, Route]
) -> GenerateOptions:
    """Strip foreign replay state; returns `options` itself (same messages) when nothing changed."""
    messages = options.messages
    out: list[Message] | None = None
    for i, message in enumerate(messages):
        source = message.source
        if (
            isinstance(source, ModelSource)
            and source.replay_state is not None
            and message.role == "assistant"
        ):
            held = routes.get(source.provider)
            if held is None or held.adapter is not target.origin:
                if out is None:
                    out = list(messages[:i])
                stripped = ModelSource(source.provider, source.model)
                out.append(msgspec.structs.replace(message, source=stripped))
                continue
        if out is not None:
            out.append(message)
    if out is None:
        return options
    return msgspec.structs.replace(options, messages=tuple(out))
