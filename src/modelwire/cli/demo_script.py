"""The demo's scripted conversation: what the local DeepSeek-compatible server answers.

The conversation is written for modelwire (it is not a recording). One user question, two model
steps: the first reasons, says a sentence and calls the `calculator` tool with arguments split
over many deltas; the second step's first request is answered with one transient HTTP 503 so the
retry plugin acts, and its second request streams the final answer with cache-hit usage.
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = [
    "DEMO_MODEL",
    "DEMO_PROMPT",
    "DEMO_SCRIPT",
    "DEMO_SYSTEM",
    "InjectedFailure",
    "ScriptedReply",
    "ScriptedStep",
    "ScriptedToolCall",
    "WireUsage",
]

DEMO_MODEL = "deepseek-v4-flash"
"""The model id the demo requests (a DeepSeek catalog id)."""

DEMO_SYSTEM = "You are a concise travel assistant. Use the calculator for any arithmetic."
"""The demo agent's system prompt."""

DEMO_PROMPT = (
    "My trip has three flights: 2 h 35 min, 4 h 50 min and 1 h 45 min. "
    "How long am I in the air in total?"
)
"""The user message of the demo turn."""


@dataclass(frozen=True, slots=True)
class WireUsage:
    """DeepSeek usage figures as reported on the wire (`prompt_tokens` includes cache hits)."""

    prompt_tokens: int
    completion_tokens: int
    prompt_cache_hit_tokens: int
    reasoning_tokens: int


@dataclass(frozen=True, slots=True)
class ScriptedToolCall:
    """One tool call, streamed as one delta per argument fragment."""

    id: str
    name: str
    argument_fragments: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class ScriptedReply:
    """One successful streamed response: reasoning deltas, text deltas, an optional tool call."""

    reasoning: tuple[str, ...]
    content: tuple[str, ...]
    usage: WireUsage
    tool_call: ScriptedToolCall | None = None

    @property
    def finish_reason(self) -> str:
        """The wire `finish_reason` of the last choice chunk."""
        return "tool_calls" if self.tool_call is not None else "stop"


@dataclass(frozen=True, slots=True)
class InjectedFailure:
    """A transient HTTP failure served instead of a response (DeepSeek's error body shape)."""

    status: int
    message: str
    error_type: str
    retry_after: str | None = None


@dataclass(frozen=True, slots=True)
class ScriptedStep:
    """What one model step is answered with: failures first (one per attempt), then the reply."""

    reply: ScriptedReply
    failures: tuple[InjectedFailure, ...] = field(default=())


DEMO_SCRIPT: tuple[ScriptedStep, ...] = (
    ScriptedStep(
        reply=ScriptedReply(
            reasoning=(
                "Three",
                " legs",
                " to",
                " add",
                ":",
                " 2:35,",
                " 4:50",
                " and",
                " 1:45.",
                " Convert",
                " each",
                " to",
                " minutes",
                " and",
                " let",
                " the",
                " calculator",
                " do",
                " the",
                " sum.",
            ),
            content=("Let", " me", " add", " up", " your", " flight", " times", "."),
            tool_call=ScriptedToolCall(
                id="call_demo_0",
                name="calculator",
                argument_fragments=(
                    "",
                    '{"',
                    "expression",
                    '":"',
                    "(2*60",
                    "+35)",
                    "+(4*60",
                    "+50)",
                    "+(1*60",
                    "+45)",
                    '"}',
                ),
            ),
            usage=WireUsage(
                prompt_tokens=318,
                completion_tokens=61,
                prompt_cache_hit_tokens=0,
                reasoning_tokens=29,
            ),
        )
    ),
    ScriptedStep(
        failures=(
            InjectedFailure(
                status=503,
                message="Server overloaded, please retry shortly",
                error_type="service_unavailable_error",
            ),
        ),
        reply=ScriptedReply(
            reasoning=(
                "The",
                " calculator",
                " says",
                " 550",
                " minutes,",
                " which",
                " is",
                " 9",
                " hours",
                " 10",
                " minutes.",
            ),
            content=(
                "You",
                " are",
                " in",
                " the",
                " air",
                " for",
                " **550",
                " minutes**",
                " in",
                " total",
                ":",
                " 9",
                " h",
                " 10",
                " min.",
                " Have",
                " a",
                " good",
                " trip!",
            ),
            usage=WireUsage(
                prompt_tokens=402,
                completion_tokens=47,
                prompt_cache_hit_tokens=384,
                reasoning_tokens=18,
            ),
        ),
    ),
)
"""The demo conversation, one entry per model step."""
