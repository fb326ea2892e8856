"""Provider, model and reasoning metadata that adapters publish and the runtime validates."""

from __future__ import annotations

from typing import Literal, TypeAlias

import msgspec

from .pricing import ModelPricing
from .redacted import hidden, hidden_repr, hidden_rich_repr

__all__ = [
    "ConfigurableProvider",
    "DiscoveredModel",
    "ModelContext",
    "ModelDiscoveryRequest",
    "ModelInfo",
    "ModelModality",
    "ModelReasoningInfo",
    "ProviderInfo",
    "ReasoningEffortInfo",
    "ResolvedModelInfo",
    "StructuredOutputSupport",
]

ModelModality: TypeAlias = Literal["text", "image", "document", "audio"]
"""An input modality a model accepts."""

StructuredOutputSupport: TypeAlias = Literal["native-strict", "native-json", "emulated"]
"""See `ResolvedModelInfo.structured_output`; where the provider does not enforce the schema,
the runtime validates the answer and ends with `OUTPUT_INVALID` when it does not match."""


class ProviderInfo(msgspec.Struct, frozen=True):
    """Display metadata for one registered route; `id` is the route."""

    id: str
    name: str


class ModelInfo(msgspec.Struct, frozen=True, omit_defaults=True, kw_only=True):
    """An advisory catalog entry; `input_modalities` None means unknown; `recommended` marks
    the route's default model (what a caller that names no model gets)."""

    provider: str
    id: str
    name: str
    description: str | None = None
    input_modalities: tuple[str, ...] | None = None
    recommended: bool = False


class ModelContext(msgspec.Struct, frozen=True):
    """Total request-plus-response capacity of a model, in tokens."""

    context_window: int


class ReasoningEffortInfo(msgspec.Struct, frozen=True, omit_defaults=True):
    """One selectable reasoning effort: adapter-owned id plus display name."""

    id: str
    name: str
    description: str | None = None


class ModelReasoningInfo(msgspec.Struct, frozen=True, omit_defaults=True):
    """The efforts a model offers, in adapter-preferred order, and an optional default."""

    efforts: tuple[ReasoningEffortInfo, ...]
    default_effort: str | None = None


class ResolvedModelInfo(msgspec.Struct, frozen=True, omit_defaults=True, kw_only=True):
    """Exact-model metadata: identity plus context window, default output cap and reasoning."""

    provider: str
    id: str
    name: str
    description: str | None = None
    input_modalities: tuple[str, ...] | None = None
    context: ModelContext | None = None
    default_max_tokens: int | None = None
    reasoning: ModelReasoningInfo | None = None
    structured_output: StructuredOutputSupport | None = None
    """How the route honours `GenerateOptions.output`: the provider enforces the schema
    (`native-strict`), guarantees JSON only (`native-json`), or modelwire asks for it in the
    prompt (`emulated`); None: not offered (a request with `output` is refused)."""
    tool_choice: bool | None = None
    """Whether the route can express `tool_choice` (None or False: not offered)."""
    parallel_tool_calls: bool | None = None
    """Whether the route can express `parallel_tool_calls` (None or False: not offered)."""
    pricing: ModelPricing | None = None
    """The model's list prices (None: unknown, so its calls' cost is unknown too)."""
    wire: str | None = None
    """The wire family a call of this model speaks (``deepseek``, ``openai-completions``, ...,
    ``replay``): its row of the runtime's options contract (`runtime.options_contract`) decides
    which `GenerateOptions` fields are honoured or refused. None: an adapter outside the table
    (only the flags above are checked)."""
    default_timeout_ms: int | None = None
    """The route's total deadline of a call in ms, when the call sets none (None: no deadline)."""
    default_first_token_timeout_ms: int | None = None
    """The route's deadline until a call's first chunk in ms, when the call sets none."""


class ConfigurableProvider(msgspec.Struct, frozen=True, omit_defaults=True, kw_only=True):
    """A provider a settings surface may offer for configuration (live or dormant)."""

    provider: str
    display_name: str
    settings_ns: str
    settings_path: tuple[str, ...] = ()
    declared: bool | None = None


class ModelDiscoveryRequest(msgspec.Struct, frozen=True, omit_defaults=True, kw_only=True):
    """A draft endpoint to interrogate for models; `api_key` is used once and never stored."""

    provider: str | None = None
    base_url: str | None = None
    api: str | None = None
    api_key: str | None = None

    def __repr__(self) -> str:
        return hidden_repr(self, {"api_key": hidden(self.api_key)})

    def __rich_repr__(self) -> list[tuple[str, object]]:
        return hidden_rich_repr(self, {"api_key": hidden(self.api_key)})


class DiscoveredModel(msgspec.Struct, frozen=True, omit_defaults=True, kw_only=True):
    """A model an endpoint reported, with whatever capacities it stated."""

    id: str
    name: str | None = None
    context_window: int | None = None
    max_tokens: int | None = None
