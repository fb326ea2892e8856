"""What every client shares: the request, the result shape and the availability signal."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

MODEL = "deepseek-chat"
PROMPT = "What is the weather in San Francisco? Think first."
API_KEY = "sk-bench-0000"
TOOL_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "location": {"type": "string"},
        "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
        "notes": {"type": "string"},
    },
    "required": ["location"],
}
TOOL_DESCRIPTION = "Get the weather for a location."
CHAT_TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": TOOL_DESCRIPTION,
            "parameters": TOOL_SCHEMA,
        },
    }
]


class Unavailable(Exception):
    """The client cannot run here (its library or modelwire piece is missing); never faked."""


@dataclass
class Result:
    """What one client reassembled from one stream. `None` = the library does not surface it."""

    text: str
    reasoning: str | None
    tool_calls: list[dict[str, str]] = field(default_factory=list)  # id, name, arguments
    usage: dict[str, int | None] | None = None  # disjoint buckets, as modelwire's TokenUsage
    finish: str | None = None  # "stop" | "tool-calls" in modelwire's spelling


class Client:
    """Base class: `setup(base_url)`, `stream(tools) -> Result`, `close()`; class metadata."""

    name = "?"
    proto = "chat"  # chat | responses | anthropic
    kind = "peer"  # floor | modelwire | peer
    checks_usage = False  # the harness compares usage buckets too
    tools = True  # can run the tool-call stream

    def version(self) -> str:
        """Library and version, for the table."""
        return "?"

    async def setup(self, base_url: str) -> None:
        """Build the client for `base_url` (scheme, host, port and size segments, no `/v1`)."""

    async def stream(self, tools: bool) -> Result:
        """Consume one whole stream and return what was reassembled."""
        raise NotImplementedError

    async def close(self) -> None:
        """Release connections."""


class ToolAcc:
    """Accumulate streamed tool-call deltas by index (lists, joined once)."""

    __slots__ = ("calls",)

    def __init__(self) -> None:
        self.calls: dict[int, list[Any]] = {}

    def add(self, index: int, id_: str | None, name: str | None, args: str | None) -> None:
        """Merge one delta."""
        c = self.calls.get(index)
        if c is None:
            c = self.calls[index] = [None, None, []]
        if id_:
            c[0] = id_
        if name:
            c[1] = name
        if args:
            c[2].append(args)

    def done(self) -> list[dict[str, str]]:
        """The reassembled calls in index order."""
        return [
            {"id": c[0], "name": c[1], "arguments": "".join(c[2])}
            for _, c in sorted(self.calls.items())
        ]
