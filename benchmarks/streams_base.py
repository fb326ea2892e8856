"""The protocol-independent half of the benchmark streams: the plan and its expected result."""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from typing import Any

MODEL = "deepseek-chat"
TOOL_NAME = "get_weather"
CALL_ID = "call_0_3b7e5f0a-6c1d-4e2f-8a9b-123456789abc"
FC_ITEM_ID = "fc_68c42d1d0878819d8266007cd3d1402c"
ANTHROPIC_TOOL_ID = "toolu_01825dXWLSoJwCst1qTsiWdb"
PROMPT_TOKENS = 1234
CACHE_HIT = 1024
MIN_N = 8

_WORDS = (  # noqa: SIM905 - prose is easier to read than a list literal
    "the model streams tokens to the client which must parse every server sent event quickly "
    "latency matters because each delta is small and the overhead per chunk adds up over a long "
    "reasoning trace so a tuned client keeps its inner loop tight avoids copies and allocations "
    "caf\u00e9 na\u00efve r\u00e9sum\u00e9 \u4e2d\u6587\u6d4b\u8bd5 \U0001f642 "
    'quote"d back\\slash tab\tend'
).split(" ")


@dataclass(frozen=True)
class Plan:
    """What one stream carries, independent of the wire protocol."""

    n: int
    reasoning: list[str]
    text: list[str]
    args: list[str]

    @property
    def has_tool(self) -> bool:
        """True when the stream carries a tool call."""
        return bool(self.args)


def _text(rng: random.Random, length: int) -> str:
    out: list[str] = []
    total = 0
    while total < length:
        w = rng.choice(_WORDS)
        r = rng.random()
        if r < 0.05:
            w += ".\n"
        elif r < 0.10:
            w += ","
        w += " "
        out.append(w)
        total += len(w)
    return "".join(out)[:length]


def _cut(text: str, lens: list[int]) -> list[str]:
    pieces: list[str] = []
    pos = 0
    for ln in lens:
        pieces.append(text[pos : pos + ln])
        pos += ln
    assert pos == len(text)
    return pieces


def _even_lens(total: int, k: int, rng: random.Random) -> list[int]:
    """k positive lengths summing to total, each within one or two of total/k."""
    base, extra = divmod(total, k)
    lens = [base + (1 if i < extra else 0) for i in range(k)]
    for i in range(0, k - 1, 2):  # jitter pairs, keeping the sum and every length >= 1
        if lens[i] > 2 and rng.random() < 0.5:
            lens[i] -= 1
            lens[i + 1] += 1
    return lens


def dumps(obj: Any) -> str:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))


def _arguments(size: int, rng: random.Random) -> str:
    base = {"location": "San Francisco, CA", "unit": "celsius", "notes": ""}
    pad = size - len(dumps(base))
    if pad < 0:
        raise ValueError(f"tool_bytes must be >= {len(dumps(base))}, got {size}")
    letters = "abcdefghijklmnopqrstuvwxyz     "
    base["notes"] = "".join(rng.choice(letters) for _ in range(pad))
    out = dumps(base)
    assert len(out) == size
    return out


def default_tool_bytes(n: int) -> int:
    """About four argument characters per tool delta, as real models stream them."""
    return max(64, 4 * max(2, round((n - 2) * 0.20)))


def plan(n: int, tool_bytes: int = 0, seed: int = 1234) -> Plan:
    """The deterministic content of a stream of `n` deltas (tool call when `tool_bytes > 0`)."""
    if n < MIN_N:
        raise ValueError(f"n must be >= {MIN_N}, got {n}")
    rng = random.Random(seed * 1_000_003 + n * 7 + tool_bytes)
    n_tool = max(2, round(n * 0.20)) if tool_bytes else 0
    n_reason = round(n * 0.25)
    n_text = n - n_tool - n_reason
    r_lens = [rng.randint(3, 5) for _ in range(n_reason)]
    t_lens = [rng.randint(3, 5) for _ in range(n_text)]
    reasoning = _cut(_text(rng, sum(r_lens)), r_lens)
    text = _cut(_text(rng, sum(t_lens)), t_lens)
    args: list[str] = []
    if tool_bytes:
        if tool_bytes < n_tool:
            raise ValueError(f"tool_bytes ({tool_bytes}) must be >= the tool deltas ({n_tool})")
        args = _cut(_arguments(tool_bytes, rng), _even_lens(tool_bytes, n_tool, rng))
    return Plan(n=n, reasoning=reasoning, text=text, args=args)


def expected(p: Plan) -> dict[str, Any]:
    """What a correct client reassembles from any protocol's rendering of `p`."""
    output_tokens = p.n + 2
    args = "".join(p.args)
    return {
        "n": p.n,
        "text": "".join(p.text),
        "reasoning": "".join(p.reasoning),
        "tool_calls": (
            [{"id": CALL_ID, "name": TOOL_NAME, "arguments": args}] if p.has_tool else []
        ),
        "finish": "tool-calls" if p.has_tool else "stop",
        "usage": {
            "input_tokens": PROMPT_TOKENS - CACHE_HIT,
            "output_tokens": output_tokens,
            "cache_read_tokens": CACHE_HIT,
            "reasoning_tokens": len(p.reasoning),
        },
        # provider-specific tool-call ids (the check accepts the protocol's own id)
        "tool_ids": {
            "chat": CALL_ID,
            "responses": CALL_ID,
            "responses_item": FC_ITEM_ID,
            "anthropic": ANTHROPIC_TOOL_ID,
        },
    }
