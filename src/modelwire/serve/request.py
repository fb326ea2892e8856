"""What every incoming protocol is translated into: one `GatewayRequest`.

The model as the client named it (`route:model` or an alias), whether to stream, and the request
as modelwire's vocabulary: `GenerateOptions` with an empty route and model, filled in when the
gateway resolved which target serves it (`for_target`).
"""

from __future__ import annotations

from dataclasses import dataclass

import msgspec

from ..vocab import GenerateOptions

__all__ = ["GatewayRequest"]


@dataclass(frozen=True, slots=True)
class GatewayRequest:
    """One translated client request (see the module docstring); `include_usage` is Chat
    Completions' `stream_options.include_usage` (the other protocols always report usage)."""

    model: str
    stream: bool
    options: GenerateOptions
    include_usage: bool = False

    def for_target(self, provider: str, model: str, session_id: str) -> GenerateOptions:
        """The request addressed to `provider:model`, in session `session_id`."""
        return msgspec.structs.replace(
            self.options, provider=provider, model=model, session_id=session_id
        )
