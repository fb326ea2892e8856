"""modelwire: one vocabulary, one chunk protocol and a durable log between agents and LLM providers.

The curated public names live here (see DESIGN §2 and §8). Adapters, the session log, the agent
loop and the CLI are imported from their own modules, and the runtime names (`LlmRuntime`,
`LlmAdapter`, …) and the agent's `tool` and `open_runtime` load on first use, so that
`import modelwire` stays light.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .assembler import BlockAssembler
from .errors import (
    DEFAULT_RETRYABLE_CODES,
    AuthError,
    ContentFilterError,
    ContextWindowError,
    ErrorCode,
    HarnessError,
    InvalidRequestError,
    LlmError,
    LlmTimeoutError,
    ModelNotFoundError,
    OutputInvalidError,
    QuotaError,
    RateLimitError,
    ResponseError,
    ServerError,
    TransportError,
    TurnLimitError,
    error_chain,
    is_context_window_exceeded_error,
    is_harness_error,
    is_quota_exceeded_error,
)
from .policy import (
    AlwaysRetryPolicy,
    NormalRetryPolicy,
    RetryPolicy,
    backoff_delay_ms,
    policy_key,
    resolve_retry_policy,
)
from .vocab import (
    Aborted,
    AdapterDefaults,
    AudioBlock,
    BlockEnd,
    BlockStart,
    CallConfig,
    ContentBlock,
    DocumentBlock,
    EmbedOptions,
    EmbedResult,
    Error,
    Finish,
    FinishReason,
    FreeText,
    GenerateOptions,
    ImageAttachmentRef,
    ImageBlock,
    LlmFailure,
    MaxTokens,
    Message,
    MessageSource,
    ModelContext,
    ModelInfo,
    ModelReasoningInfo,
    ModelSource,
    OutputSchema,
    PluginSource,
    ProviderInfo,
    ProviderTool,
    ReasoningBlock,
    ReasoningDelta,
    ReasoningEffortInfo,
    ReplayEnvelope,
    ResolvedModelInfo,
    Stop,
    StreamChunk,
    TextBlock,
    TextDelta,
    TokenUsage,
    ToolCallBlock,
    ToolCallDelta,
    ToolCalls,
    ToolChoice,
    ToolChoiceTool,
    ToolResultBlock,
    ToolSchema,
    ToolSource,
    UsageChunk,
    UserSource,
    assistant_message,
    call_config_equals,
    is_token_delta,
    system_message,
    tool_result_message,
    user_message,
)

# -- runtime and assembler names are appended below by their modules' owners --

__all__ = [
    "DEFAULT_RETRYABLE_CODES",
    "Aborted",
    "AdapterDefaults",
    "AlwaysRetryPolicy",
    "AudioBlock",
    "AuthError",
    "BlockAssembler",
    "BlockEnd",
    "BlockStart",
    "CallConfig",
    "ContentBlock",
    "ContentFilterError",
    "ContextWindowError",
    "DocumentBlock",
    "EmbedOptions",
    "EmbedResult",
    "Error",
    "ErrorCode",
    "Finish",
    "FinishReason",
    "FreeText",
    "GenerateOptions",
    "GenerateResult",
    "HarnessError",
    "ImageAttachmentRef",
    "ImageBlock",
    "InvalidRequestError",
    "LlmAdapter",
    "LlmError",
    "LlmFailure",
    "LlmRuntime",
    "LlmTimeoutError",
    "MaxTokens",
    "Message",
    "MessageSource",
    "ModelContext",
    "ModelInfo",
    "ModelNotFoundError",
    "ModelReasoningInfo",
    "ModelSource",
    "NormalRetryPolicy",
    "OutputInvalidError",
    "OutputSchema",
    "PendingApproval",
    "PluginSource",
    "PreparedCall",
    "ProviderInfo",
    "ProviderTool",
    "QuotaError",
    "RateLimitError",
    "ReasoningBlock",
    "ReasoningDelta",
    "ReasoningEffortInfo",
    "Registration",
    "ReplayEnvelope",
    "ResolvedModelInfo",
    "ResponseError",
    "RetryPolicy",
    "Scope",
    "ServerError",
    "Stop",
    "StreamChunk",
    "TextBlock",
    "TextDelta",
    "TokenUsage",
    "ToolCallBlock",
    "ToolCallDelta",
    "ToolCalls",
    "ToolChoice",
    "ToolChoiceTool",
    "ToolResultBlock",
    "ToolSchema",
    "ToolSource",
    "TransportError",
    "TurnLimitError",
    "UsageChunk",
    "UserSource",
    "assistant_message",
    "backoff_delay_ms",
    "call_config_equals",
    "error_chain",
    "is_context_window_exceeded_error",
    "is_harness_error",
    "is_quota_exceeded_error",
    "is_token_delta",
    "open_runtime",
    "policy_key",
    "resolve_retry_policy",
    "system_message",
    "tool",
    "tool_result_message",
    "user_message",
]

if TYPE_CHECKING:
    __version__: str
    from .agent import PendingApproval, open_runtime, tool
    from .runtime import (
        GenerateResult,
        LlmAdapter,
        LlmRuntime,
        PreparedCall,
        Registration,
        Scope,
    )

_LAZY = frozenset(
    {"GenerateResult", "LlmAdapter", "LlmRuntime", "PreparedCall", "Registration", "Scope"}
)
"""Runtime names, imported on first use: the runtime brings asyncio (and with it ssl, logging,
concurrent.futures), which a program that only builds messages or parses chunks never needs."""

_LAZY_AGENT = frozenset({"PendingApproval", "open_runtime", "tool"})
"""Agent names (layer 7: the runtime, the adapters, the session log), imported on first use."""


def _version() -> str:
    """The installed distribution's version (`importlib.metadata`), read on first use only: the
    metadata machinery costs tens of milliseconds to import, which `import modelwire` must not pay.
    A source tree that was never installed reports `0+unknown`."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("modelwire")
    except PackageNotFoundError:
        return "0+unknown"


def __getattr__(name: str) -> object:
    if name == "__version__":
        value = globals()["__version__"] = _version()
        return value
    if name in _LAZY or name in _LAZY_AGENT:
        from . import agent, runtime

        value = getattr(runtime if name in _LAZY else agent, name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'modelwire' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY, *_LAZY_AGENT})
