"""The protocol table: every `api` a route may name, loaded on first use (`protocol(api)`)."""

from __future__ import annotations

import functools
import importlib
from typing import Final

from ....vocab import StructuredOutputSupport
from ..materialize import ModelDescriptor
from .anthropic_messages import build_anthropic_request
from .anthropic_stream import AnthropicTranslator
from .completions_stream import CompletionsTranslator
from .openai_completions import build_completions_request, completions_compat
from .openai_responses import build_responses_request
from .responses_stream import ResponsesTranslator
from .spec import WireProtocol

__all__ = ["API_NAMES", "protocol"]


def _completions_output(model: ModelDescriptor) -> StructuredOutputSupport:
    return "native-strict" if completions_compat(model).supports_strict_mode else "native-json"


def _strict(model: ModelDescriptor) -> StructuredOutputSupport:
    return "native-strict"


def _emulated(model: ModelDescriptor) -> StructuredOutputSupport:
    return "emulated"


def _anthropic_key(key: str) -> dict[str, str]:
    return {"x-api-key": key}


_BUILT_IN: Final = {
    "openai-completions": WireProtocol(
        "openai-completions",
        build_completions_request,
        CompletionsTranslator,
        _completions_output,
        free_text_tools=True,
    ),
    "openai-responses": WireProtocol(
        "openai-responses",
        build_responses_request,
        ResponsesTranslator,
        _strict,
        free_text_tools=True,
    ),
    "anthropic-messages": WireProtocol(
        "anthropic-messages",
        build_anthropic_request,
        AnthropicTranslator,
        _emulated,
        key_headers=_anthropic_key,
        key_header_names=("authorization", "cf-aig-authorization", "x-api-key"),
    ),
}

_LAZY: Final = {
    # api: the module (under this package) whose `PROTOCOL` serves it
    "google-generative-ai": "google_generative",
    "mistral-conversations": "mistral_conversations",
    "azure-openai-responses": "azure_openai",
    "azure-openai-completions": "azure_openai",
    "bedrock-converse-stream": "bedrock_converse",
    "anthropic-bedrock": "anthropic_clouds",
    "anthropic-vertex": "anthropic_clouds",
}

API_NAMES: Final[tuple[str, ...]] = (*_BUILT_IN, *_LAZY)
"""Every protocol a route may name, built-in first."""


@functools.cache
def protocol(api: str) -> WireProtocol:
    """The protocol serving `api` (raises `ValueError` for a name outside `API_NAMES`)."""
    built_in = _BUILT_IN.get(api)
    if built_in is not None:
        return built_in
    module = _LAZY.get(api)
    if module is None:
        raise ValueError(f"unknown protocol {api!r}")
    loaded = importlib.import_module(f"{__package__}.{module}")
    found: object = getattr(loaded, "PROTOCOLS", {}).get(api) or loaded.PROTOCOL
    if not isinstance(found, WireProtocol) or found.api != api:
        raise ValueError(f"module {module} does not serve protocol {api!r}")
    return found
