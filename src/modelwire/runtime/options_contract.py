"""The options contract: for every wire family, what becomes of each `GenerateOptions` field.

One table, checked once at the runtime edge (after the route resolved the model, before the
adapter is called, so a refusal never reaches the network). A route's `ResolvedModelInfo.wire`
names its row; a field is

* `HONOURED` — the adapter sends it (or, for replay, compares it with the recording in strict
  mode);
* `BY_MODEL` — honoured where the resolved model info offers it (`structured_output`,
  `tool_choice`, `parallel_tool_calls`), refused elsewhere; `reasoning_effort` likewise, against
  the model's offered efforts, refused `UNSUPPORTED_REASONING_EFFORT` (`models.materialize`);
* `RUNTIME` — applied by the runtime itself for every adapter: the call deadlines, enforced in
  the failure boundary (`runtime.deadline`);
* `HINT` — advisory by definition: `session_id` is a cache / affinity key where the wire has one
  (``prompt_cache_key``, ``x-affinity``) and the replay cursor's key, `purpose` classifies an
  auxiliary call (DeepSeek turns thinking off for a session title); neither changes an answer;
* `REFUSED` — a call that sets it ends `UNSUPPORTED_OPTION` naming the field and the route.

A field left unset (None) is never refused. An adapter whose model info names no wire (a custom
adapter) gets the `BY_MODEL` checks only. `tests/runtime/test_options_matrix.py` walks the table
against real loopback servers: each honoured field must reach the request, each refused one must
end the call before any request is sent.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from typing import Final

from ..errors import ErrorCode, LlmError
from ..vocab import GenerateOptions, ResolvedModelInfo

__all__ = ["FIELDS", "OPTIONS_CONTRACT", "WIRES", "Support", "refused_option", "unsupported"]


class Support(enum.Enum):
    """What a wire family does with one `GenerateOptions` field (see the module docstring)."""

    HONOURED = "honoured"
    BY_MODEL = "by-model"
    RUNTIME = "runtime"
    HINT = "hint"
    REFUSED = "refused"


FIELDS: Final[tuple[str, ...]] = GenerateOptions.__struct_fields__
"""Every field of `GenerateOptions`, in declaration order."""

_H, _M, _R, _I, _X = (
    Support.HONOURED,
    Support.BY_MODEL,
    Support.RUNTIME,
    Support.HINT,
    Support.REFUSED,
)

_COMMON: Final[Mapping[str, Support]] = {
    "provider": _H,
    "model": _H,
    "messages": _H,
    "system": _H,
    "tools": _H,
    "temperature": _H,
    "max_tokens": _H,
    "stop": _H,
    "reasoning_effort": _M,
    "session_id": _I,
    "purpose": _I,
    "output": _M,
    "tool_choice": _M,
    "parallel_tool_calls": _M,
    "provider_options": _H,
    "timeout_ms": _R,
    "first_token_timeout_ms": _R,
}

_PROVIDERS: Final = {**_COMMON, "stop": _X}  # no providers protocol sends stop sequences yet

OPTIONS_CONTRACT: Final[Mapping[str, Mapping[str, Support]]] = {
    "deepseek": _COMMON,
    "openai-completions": _PROVIDERS,
    "openai-responses": _PROVIDERS,
    "anthropic-messages": _PROVIDERS,
    "google-generative-ai": _PROVIDERS,
    "mistral-conversations": _PROVIDERS,
    "azure-openai-responses": _PROVIDERS,
    "azure-openai-completions": _PROVIDERS,
    "bedrock-converse-stream": _PROVIDERS,
    "anthropic-bedrock": _PROVIDERS,
    "anthropic-vertex": _PROVIDERS,
    # a replay answers what was recorded: extra body fields cannot have shaped that answer
    "replay": {**_COMMON, "provider_options": _X},
}
"""wire family → field → `Support` (every family lists every field)."""

WIRES: Final[tuple[str, ...]] = tuple(OPTIONS_CONTRACT)


def _by_model(field: str, info: ResolvedModelInfo) -> bool:
    if field == "reasoning_effort":
        return True  # checked against the offered efforts when the call was materialized
    if field == "output":
        return info.structured_output is not None
    if field == "tool_choice":
        return info.tool_choice is True
    return info.parallel_tool_calls is True


_SHOWN: Final = {"output": "output (structured output)"}


_CHECKED: Final[Mapping[str, tuple[tuple[str, Support], ...]]] = {
    wire: tuple((f, row[f]) for f in FIELDS if row[f] is _M or row[f] is _X)
    for wire, row in OPTIONS_CONTRACT.items()
}
_CUSTOM: Final = tuple((f, _M) for f in FIELDS if _COMMON[f] is _M)


def refused_option(options: GenerateOptions, info: ResolvedModelInfo) -> str | None:
    """The first field `options` sets that the route cannot honour (as the refusal names it),
    or None. One pass over the few fields the route's row may refuse (per call, never per
    chunk)."""
    checked = _CHECKED.get(info.wire, _CUSTOM) if info.wire is not None else _CUSTOM
    for field, support in checked:
        if getattr(options, field) is None:
            continue
        if support is _X or not _by_model(field, info):
            return _SHOWN.get(field, field)
    return None


def unsupported(route: str, option: str) -> LlmError:
    """The `UNSUPPORTED_OPTION` refusal of `option` on `route`."""
    return LlmError(
        f'route "{route}" cannot honour {option} for this model', ErrorCode.UNSUPPORTED_OPTION
    )
