"""Tools the model may call (their execution into tool-result messages is `toolcall.py`).

A `Tool` is either written by hand — name, description, a parameters JSON Schema and a function
of the parsed argument dict — or derived from a typed Python function (`Tool.from_function`, the
`@tool` decorator; see `signature.py`), whose arguments are decoded into the annotated types and
which may take the call's `RunContext`.
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TypeAlias, overload

from ..errors import ErrorCode, HarnessError
from ..vocab import (
    ContentBlock,
    FreeText,
    ProviderTool,
    ToolSchema,
    freeze_json,
)
from ..vocab.json import JsonValue
from .context import RunContext
from .signature import TOOL_NAME, Signature, signature_of, text_parameter

__all__ = ["ApprovalRule", "Tool", "ToolFn", "ToolResultValue", "tool"]

ToolResultValue: TypeAlias = str | Sequence[ContentBlock] | JsonValue
"""What a tool function may return: text, content blocks, or any JSON value (rendered compactly;
msgspec structs and dataclasses too)."""

ToolFn: TypeAlias = Callable[[dict[str, JsonValue]], ToolResultValue | Awaitable[ToolResultValue]]
"""A hand-written tool implementation: receives the parsed argument object; sync or async."""

ApprovalRule: TypeAlias = bool | Callable[[RunContext, dict[str, JsonValue]], object]
"""`needs_approval`: True/False, or a rule `(ctx, args) -> bool` (sync or async) evaluated
before each call on its `RunContext` and parsed arguments (a free-text tool's: `{"input": text}`);
a rule that raises asks for approval."""

_PROVIDER_TOOLS = ("apply_patch", "local_shell")


@dataclass(frozen=True, slots=True)
class Tool:
    """A named tool: description and parameters JSON schema go to the model, `fn` runs the call.

    `timeout_ms` (positive, or None for none) bounds an async tool by the agent's sleep: past it
    the call is cancelled and answered `TOOL_TIMEOUT` (a sync function runs to completion on the
    event loop thread). `idempotent` (keyword) declares the tool safe to run twice: a turn resumed
    after its process died runs an unanswered call of this tool again instead of answering it
    `TOOL_INTERRUPTED`. `signature` is set by `from_function` and decides how `fn` is called.
    `server` (keyword) names the MCP server whose tool this is (None: the agent's own); its
    `tool/call` and `tool/result` events carry it. `needs_approval` (keyword, an `ApprovalRule`)
    makes a call wait for a person: the turn pauses (`approval.py`) until it is decided.

    `free_text` (keyword, a `FreeText`) makes it a free-text tool: the model writes raw text
    (optionally in a grammar) instead of JSON arguments, and `fn` receives that text (a typed
    function: as its one `str` parameter). Only OpenAI's Chat Completions and Responses send such
    tools (OpenAI "custom" tools); other routes refuse them with UNSUPPORTED_OPTION.
    `provider_tool` (keyword, ``"apply_patch"`` or ``"local_shell"``) makes it the provider's
    client tool of that name (the tool must carry the same name): on OpenAI Responses it is sent
    as that built-in tool and its calls (`apply_patch_call`, `local_shell_call`) reach `fn` with
    the operation's or action's fields as arguments; elsewhere it is the plain function
    `parameters_json_schema` describes.
    """

    name: str
    description: str
    parameters_json_schema: Mapping[str, JsonValue]
    fn: Callable[..., object] = field(compare=False)  # a `ToolFn`, or from_function's function
    timeout_ms: float | None = None
    signature: Signature | None = field(default=None, compare=False, repr=False)
    idempotent: bool = field(default=False, kw_only=True)
    server: str | None = field(default=None, kw_only=True)
    free_text: FreeText | None = field(default=None, kw_only=True)
    provider_tool: ProviderTool | None = field(default=None, kw_only=True)
    needs_approval: ApprovalRule = field(default=False, kw_only=True, compare=False)

    @property
    def parameters(self) -> Mapping[str, JsonValue]:
        """The parameters JSON schema (alias of `parameters_json_schema`)."""
        return self.parameters_json_schema

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise HarnessError("tool name must be a non-empty string", ErrorCode.INVALID_CONFIG)
        if not isinstance(self.parameters_json_schema, Mapping):
            raise HarnessError(
                f"tool {self.name!r}: parameters must be a JSON-schema object",
                ErrorCode.INVALID_CONFIG,
            )
        if not callable(self.fn):
            raise HarnessError(f"tool {self.name!r}: fn must be callable", ErrorCode.INVALID_CONFIG)
        limit = self.timeout_ms
        if limit is not None and (
            isinstance(limit, bool)
            or not isinstance(limit, (int, float))
            or not (math.isfinite(limit) and limit > 0)
        ):
            raise HarnessError(
                f"tool {self.name!r}: timeout_ms must be a positive number of milliseconds or "
                f"None, got {limit!r}",
                ErrorCode.INVALID_CONFIG,
            )
        if not isinstance(self.idempotent, bool):
            raise HarnessError(
                f"tool {self.name!r}: idempotent must be True or False, got {self.idempotent!r}",
                ErrorCode.INVALID_CONFIG,
            )
        if not isinstance(self.needs_approval, bool) and not callable(self.needs_approval):
            raise HarnessError(
                f"tool {self.name!r}: needs_approval must be True, False or a function "
                f"(ctx, args) -> bool, got {self.needs_approval!r}",
                ErrorCode.INVALID_CONFIG,
            )
        self._check_kind()

    def _check_kind(self) -> None:
        """`free_text` and `provider_tool`: right types, not both, a provider tool's name."""
        if self.free_text is not None and not isinstance(self.free_text, FreeText):
            raise HarnessError(
                f"tool {self.name!r}: free_text must be a modelwire.FreeText, got "
                f"{type(self.free_text).__name__}",
                ErrorCode.INVALID_CONFIG,
            )
        kind = self.provider_tool
        if kind is None:
            return
        if kind not in _PROVIDER_TOOLS:
            raise HarnessError(
                f"tool {self.name!r}: provider_tool must be one of {', '.join(_PROVIDER_TOOLS)}, "
                f"got {kind!r}",
                ErrorCode.INVALID_CONFIG,
            )
        if self.name != kind or self.free_text is not None:
            raise HarnessError(
                f"tool {self.name!r}: the {kind} provider tool must be named {kind!r} and take "
                "JSON arguments (no free_text)",
                ErrorCode.INVALID_CONFIG,
            )

    @classmethod
    def from_function(
        cls,
        fn: Callable[..., object],
        name: str | None = None,
        description: str | None = None,
        *,
        idempotent: bool = False,
        timeout_ms: float | None = None,
        free_text: FreeText | None = None,
        provider_tool: ProviderTool | None = None,
        needs_approval: ApprovalRule = False,
    ) -> Tool:
        """A tool from a typed function (sync or async): name from `fn.__name__`, description
        and parameter texts from its docstring, parameters schema from its type hints.

        `idempotent=True`: safe to run twice: a turn resumed after its process died runs an
        unanswered call of this tool again instead of answering it `TOOL_INTERRUPTED`.
        `free_text` / `provider_tool` / `needs_approval`: see `Tool` (a free-text function takes exactly one
        `str` parameter, besides an optional `RunContext`).

        An unannotated parameter, a type without a JSON Schema, `*args`/`**kwargs` or a name
        providers refuse is `INVALID_CONFIG` naming it.
        """
        tool_name = name if name is not None else getattr(fn, "__name__", "")
        if not isinstance(tool_name, str) or not TOOL_NAME.fullmatch(tool_name):
            raise HarnessError(
                f"tool name {tool_name!r} must be 1-64 characters of A-Z, a-z, 0-9, _ or - "
                "(pass name=...)",
                ErrorCode.INVALID_CONFIG,
            )
        sig = signature_of(fn, tool_name)
        if free_text is not None:
            text_parameter(sig, tool_name)
        text = description if description is not None else sig.description
        return cls(
            tool_name,
            text,
            sig.schema,
            fn,
            timeout_ms=timeout_ms,
            signature=sig,
            free_text=free_text,
            provider_tool=provider_tool,
            idempotent=idempotent,
            needs_approval=needs_approval,
        )

    def __call__(self, *args: object, **kwargs: object) -> object:
        """Call the function itself (e.g. in a test of the tool)."""
        return self.fn(*args, **kwargs)

    @property
    def schema(self) -> ToolSchema:
        """The provider-neutral schema sent with requests (parameters deep-frozen)."""
        return ToolSchema(
            self.name,
            self.description,
            freeze_json(self.parameters_json_schema),
            free_text=self.free_text,
            provider_tool=self.provider_tool,
        )


@overload
def tool(fn: Callable[..., object], /) -> Tool: ...
@overload
def tool(
    *,
    name: str | None = None,
    description: str | None = None,
    idempotent: bool = False,
    timeout_ms: float | None = None,
    free_text: FreeText | None = None,
    provider_tool: ProviderTool | None = None,
    needs_approval: ApprovalRule = False,
) -> Callable[[Callable[..., object]], Tool]: ...
def tool(
    fn: Callable[..., object] | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    idempotent: bool = False,
    timeout_ms: float | None = None,
    free_text: FreeText | None = None,
    provider_tool: ProviderTool | None = None,
    needs_approval: ApprovalRule = False,
) -> Tool | Callable[[Callable[..., object]], Tool]:
    """Decorator: `@tool` or `@tool(name=..., description=..., idempotent=..., timeout_ms=...,
    free_text=..., provider_tool=..., needs_approval=...)` makes a typed function a `Tool` (see
    `Tool.from_function`). `idempotent=True`: safe to run twice: a turn resumed after its
    process died runs an unanswered call of this tool again instead of answering it
    `TOOL_INTERRUPTED`."""

    def decorate(inner: Callable[..., object]) -> Tool:
        return Tool.from_function(
            inner,
            name,
            description,
            idempotent=idempotent,
            timeout_ms=timeout_ms,
            free_text=free_text,
            provider_tool=provider_tool,
            needs_approval=needs_approval,
        )

    if fn is not None:
        return decorate(fn)

    return decorate
