"""The benchmark clients: one class per client, loaded lazily by name (see `CLIENTS`).

Every client streams one request from the local SSE server and returns a `Result` with what it
reassembled; the harness checks it against the server's `/expected` outside the timed region.
"""

from __future__ import annotations

import importlib
from typing import Any

from .common import Client, Result, Unavailable

__all__ = ["CLIENTS", "FLOOR_OF", "HARD_FLOOR_OF", "Client", "Result", "Unavailable", "load"]

# name -> "module:Class", grouped: floor, modelwire, peers. Order is the table's row order.
CLIENTS: dict[str, str] = {
    "floor-chat": "clients.floor:ChatFloor",
    "floor-responses": "clients.floor:ResponsesFloor",
    "floor-anthropic": "clients.floor:AnthropicFloor",
    "hard-floor-chat": "clients.hardfloor:ChatHardFloor",
    "hard-floor-responses": "clients.hardfloor:ResponsesHardFloor",
    "hard-floor-anthropic": "clients.hardfloor:AnthropicHardFloor",
    "mw-deepseek": "clients.mw:DeepSeekGenerate",
    "mw-deepseek-stream": "clients.mw:DeepSeekStream",
    "mw-deepseek-otel": "clients.mw:DeepSeekOtel",
    "mw-providers-chat": "clients.mw:ProvidersChat",
    "mw-providers-responses": "clients.mw:ProvidersResponses",
    "mw-providers-anthropic": "clients.mw:ProvidersAnthropic",
    "mw-agent-memory": "clients.agent:AgentMemory",
    "mw-agent-sqlite": "clients.agent:AgentSqlite",
    "mw-agent-postgres": "clients.agent:AgentPostgres",
    "openai-sdk": "clients.peers:OpenAIChat",
    "openai-sdk-responses": "clients.peers:OpenAIResponses",
    "litellm": "clients.peers:LiteLLMDeepSeek",
    "litellm-anthropic": "clients.peers:LiteLLMAnthropic",
    "pydantic-ai": "clients.peers:PydanticAIDirect",
    "pydantic-ai-agent": "clients.peers:PydanticAIAgent",
}
FLOOR_OF = {"chat": "floor-chat", "responses": "floor-responses", "anthropic": "floor-anthropic"}
HARD_FLOOR_OF = {
    "chat": "hard-floor-chat",
    "responses": "hard-floor-responses",
    "anthropic": "hard-floor-anthropic",
}


def load(name: str) -> Any:
    """Import and instantiate the client `name`; raises `Unavailable` when its library is missing."""
    try:
        spec = CLIENTS[name]
    except KeyError:
        raise SystemExit(f"unknown client {name!r}; known: {', '.join(CLIENTS)}") from None
    mod_name, cls_name = spec.split(":")
    try:
        mod = importlib.import_module(mod_name)
    except ImportError as exc:
        raise Unavailable(f"import failed: {exc}") from exc
    return getattr(mod, cls_name)()
