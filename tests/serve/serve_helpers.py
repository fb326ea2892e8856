"""Shared pieces of the gateway tests: scripted upstream streams in the providers' wire formats,
a config routing to them, and a gateway running in-process on 127.0.0.1."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import Any

from aiohttp import web
from providers_fixtures import MockServer, Reply, sse

from modelwire.serve import create_app

UPSTREAM_KEYS = {
    "OA_KEY": "sk-upstream-openai-secret-1234",
    "AN_KEY": "sk-ant-upstream-secret-5678",
}
ADMIN = "admin-key-for-tests-0123456789"


def chat_text(*words: str, prompt: int = 7, completion: int = 3) -> Reply:
    """A Chat Completions stream answering `words`, with usage."""
    events: list[dict[str, Any] | str] = [
        {"id": "up1", "model": "m", "choices": [{"index": 0, "delta": {"role": "assistant"}}]}
    ]
    events += [{"id": "up1", "choices": [{"index": 0, "delta": {"content": w}}]} for w in words]
    events += [
        {"id": "up1", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
        {
            "id": "up1",
            "choices": [],
            "usage": {"prompt_tokens": prompt, "completion_tokens": completion},
        },
        "[DONE]",
    ]
    return Reply(reads=sse(*events))


def chat_tool(call_id: str, name: str, arguments: str) -> Reply:
    """A Chat Completions stream calling tool `name` (arguments in two pieces)."""
    half = len(arguments) // 2
    first = {
        "index": 0,
        "id": call_id,
        "type": "function",
        "function": {"name": name, "arguments": arguments[:half]},
    }
    rest = {"index": 0, "function": {"arguments": arguments[half:]}}
    return Reply(
        reads=sse(
            {
                "id": "up2",
                "choices": [{"index": 0, "delta": {"role": "assistant", "tool_calls": [first]}}],
            },
            {"id": "up2", "choices": [{"index": 0, "delta": {"tool_calls": [rest]}}]},
            {"id": "up2", "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]},
            {"id": "up2", "choices": [], "usage": {"prompt_tokens": 20, "completion_tokens": 9}},
            "[DONE]",
        )
    )


def _anthropic(events: list[tuple[str, dict[str, Any]]]) -> Reply:
    return Reply(reads=[f"event: {n}\ndata: {json.dumps(d)}\n\n".encode() for n, d in events])


def anthropic_text(
    *words: str, thinking: str | None = None, signature: str = "sig-upstream-1"
) -> Reply:
    """An Anthropic Messages stream: an optional thinking block (signed), then `words`."""
    events: list[tuple[str, dict[str, Any]]] = [
        (
            "message_start",
            {
                "type": "message_start",
                "message": {
                    "id": "msg_up",
                    "type": "message",
                    "role": "assistant",
                    "model": "claude-x",
                    "content": [],
                    "stop_reason": None,
                    "usage": {"input_tokens": 11, "output_tokens": 1},
                },
            },
        )
    ]
    index = 0
    if thinking is not None:
        events += [
            (
                "content_block_start",
                {
                    "type": "content_block_start",
                    "index": 0,
                    "content_block": {"type": "thinking", "thinking": "", "signature": ""},
                },
            ),
            (
                "content_block_delta",
                {
                    "type": "content_block_delta",
                    "index": 0,
                    "delta": {"type": "thinking_delta", "thinking": thinking},
                },
            ),
            (
                "content_block_delta",
                {
                    "type": "content_block_delta",
                    "index": 0,
                    "delta": {"type": "signature_delta", "signature": signature},
                },
            ),
            ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        ]
        index = 1
    events.append(
        (
            "content_block_start",
            {
                "type": "content_block_start",
                "index": index,
                "content_block": {"type": "text", "text": ""},
            },
        )
    )
    events += [
        (
            "content_block_delta",
            {
                "type": "content_block_delta",
                "index": index,
                "delta": {"type": "text_delta", "text": w},
            },
        )
        for w in words
    ]
    events += [
        ("content_block_stop", {"type": "content_block_stop", "index": index}),
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": "end_turn"},
                "usage": {"output_tokens": 5},
            },
        ),
        ("message_stop", {"type": "message_stop"}),
    ]
    return _anthropic(events)


def anthropic_tool(call_id: str, name: str, arguments: str) -> Reply:
    """An Anthropic Messages stream calling tool `name`."""
    return _anthropic(
        [
            (
                "message_start",
                {
                    "type": "message_start",
                    "message": {
                        "id": "msg_t",
                        "type": "message",
                        "role": "assistant",
                        "model": "claude-x",
                        "content": [],
                        "usage": {"input_tokens": 30, "output_tokens": 1},
                    },
                },
            ),
            (
                "content_block_start",
                {
                    "type": "content_block_start",
                    "index": 0,
                    "content_block": {"type": "tool_use", "id": call_id, "name": name, "input": {}},
                },
            ),
            (
                "content_block_delta",
                {
                    "type": "content_block_delta",
                    "index": 0,
                    "delta": {"type": "input_json_delta", "partial_json": arguments},
                },
            ),
            ("content_block_stop", {"type": "content_block_stop", "index": 0}),
            (
                "message_delta",
                {
                    "type": "message_delta",
                    "delta": {"stop_reason": "tool_use"},
                    "usage": {"output_tokens": 12},
                },
            ),
            ("message_stop", {"type": "message_stop"}),
        ]
    )


def config(openai_url: str, anthropic_url: str, **gateway: Any) -> dict[str, Any]:
    """Routes `oa` (Chat Completions, priced) and `an` (Anthropic Messages) on the upstreams."""
    out: dict[str, Any] = {
        "providers": {
            "oa": {
                "api": "openai-completions",
                "base_url": openai_url + "/v1",
                "api_key_env": "OA_KEY",
                "models": [
                    {
                        "id": "m",
                        "cost": {"input": 1000, "output": 2000},
                        "reasoning_efforts": {"low": "low", "medium": "medium", "high": "high"},
                    }
                ],
            },
            "an": {
                "api": "anthropic-messages",
                "base_url": anthropic_url,
                "api_key_env": "AN_KEY",
                "models": [
                    {
                        "id": "claude-x",
                        "reasoning_efforts": {"low": "low", "medium": "medium", "high": "high"},
                    }
                ],
            },
        }
    }
    if gateway:
        out["gateway"] = gateway
    return out


async def start(app: web.Application) -> tuple[web.AppRunner, str]:
    """Run `app` on an ephemeral port (handlers cancelled when their client goes away)."""
    runner = web.AppRunner(app, handler_cancellation=True, shutdown_timeout=5)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    return runner, f"http://127.0.0.1:{port}"


@asynccontextmanager
async def gateway(
    settings: Mapping[str, Any], log: str = "memory:", **kw: Any
) -> AsyncIterator[tuple[web.Application, str]]:
    """A gateway on `settings` and `log`, its app and base URL."""
    app = create_app(settings, log, env=UPSTREAM_KEYS, admin_key=kw.pop("admin_key", ADMIN), **kw)
    runner, url = await start(app)
    try:
        yield app, url
    finally:
        await runner.cleanup()


__all__ = [
    "ADMIN",
    "UPSTREAM_KEYS",
    "MockServer",
    "Reply",
    "anthropic_text",
    "anthropic_tool",
    "chat_text",
    "chat_tool",
    "config",
    "gateway",
    "start",
]


def toml_config(settings: Mapping[str, Any]) -> str:
    """`settings` (as `config()` builds them) as a TOML file's text."""
    lines: list[str] = []
    for route, profile in settings["providers"].items():
        lines.append(f"[providers.{route}]")
        for key, value in profile.items():
            lines.append(f"{key} = {_toml(value)}")
    gateway_section = settings.get("gateway", {})
    scalars = {k: v for k, v in gateway_section.items() if not isinstance(v, dict)}
    if scalars:
        lines.append("[gateway]")
        lines += [f"{k} = {_toml(v)}" for k, v in scalars.items()]
    for table in ("models", "fallbacks"):
        if table in gateway_section:
            lines.append(f"[gateway.{table}]")
            lines += [f"{json.dumps(k)} = {_toml(v)}" for k, v in gateway_section[table].items()]
    return "\n".join(lines) + "\n"


def _toml(value: Any) -> str:
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{json.dumps(k)} = {_toml(v)}" for k, v in value.items()) + " }"
    if isinstance(value, list):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    return json.dumps(value)
