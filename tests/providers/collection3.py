"""The third collection of recorded traffic (`../shared/fixtures3`): its folders, the protocol
each recording speaks, the expected values these tests overrule (and why), and the checks of
what forward compatibility adds (parts kept whole in the replay envelope, the report of what
the translator did not know, an inferred finish).

A missing folder fails the collection of the tests (a `RuntimeError` at import), never a skip.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec
import pytest

from modelwire.assembler import BlockAssembler
from modelwire.wire.eventstream import EventStreamDecoder

ROOT = Path(__file__).resolve().parents[2] / ".." / "shared" / "fixtures3"

COUNTS = {
    # folder: (recorded streams, recorded HTTP errors), as MANIFEST.md lists them
    "openai-chat": (35, 8),
    "deepseek-chat": (5, 0),
    "openai-responses": (20, 2),
    "anthropic-messages": (24, 5),
    "google-generative-ai": (20, 6),
    "mistral": (4, 0),
    "bedrock-converse": (2, 1),
    "bedrock-invoke": (3, 0),
    "azure-openai": (4, 0),
}

_CONTENT_BLOCKS = {"text", "thinking", "redacted_thinking", "tool_use"}
_CONTENT_ITEMS = {
    "reasoning",
    "message",
    "function_call",
    "custom_tool_call",
    "apply_patch_call",
    "local_shell_call",
}
_CONTENT_PARTS = {"text", "thought", "functionCall"}


def folder(name: str) -> Path:
    """A folder of the collection; absent is an error (the suite fails, never skips)."""
    path = ROOT / name
    if not path.is_dir():
        raise RuntimeError(f"recorded fixtures absent: {path} (CI must fail, not skip)")
    return path


def recordings(name: str) -> list[Path]:
    """Every recorded stream of a folder (``.sse`` or ``.eventstream``) with its expectation."""
    found = sorted(folder(name).glob("*.sse")) + sorted(folder(name).glob("*.eventstream"))
    return [p for p in found if p.with_suffix(".expected.json").is_file()]


def errors(name: str) -> list[Path]:
    """Every recorded HTTP error of a folder (``errors/*.http.json``)."""
    path = folder(name) / "errors"
    return sorted(path.glob("*.http.json")) if path.is_dir() else []


def stream_params(names: Iterable[str]) -> list[Any]:
    """pytest params ``(folder, path)``, id ``folder/stem``."""
    return [
        pytest.param(name, path, id=f"{name}/{path.stem}")
        for name in names
        for path in recordings(name)
    ]


def cut(body: bytes, cuts: Iterable[int]) -> list[bytes]:
    """`body` split at the offsets `cuts` (sorted, deduplicated, inside the body)."""
    points = sorted({c for c in cuts if 0 < c < len(body)})
    return [body[a:b] for a, b in zip([0, *points], [*points, len(body)], strict=True)]


@dataclass(frozen=True)
class Overrule:
    """An expected value these tests judge wrong, what they expect instead and why."""

    reason: str
    outcome: tuple[str, str | None] | None = None  # (finish kind, failure code) instead
    replace: dict[str, Any] = field(default_factory=dict)  # expected fields replaced
    inferred: bool = False  # the finish is inferred from the end marker (and said so)


def _completed_output(path: Path) -> list[dict[str, Any]]:
    """The output items of a Responses recording's ``response.completed`` event (an event the
    translator does not read items from: an independent source for the overruled calls)."""
    for line in path.read_text().splitlines():
        if line.startswith("data:") and '"response.completed"' in line:
            output: list[dict[str, Any]] = json.loads(line[5:])["response"]["output"]
            return output
    raise AssertionError(f"{path.name} has no response.completed event")


def _client_calls(name: str, kind: str) -> list[dict[str, Any]]:
    """The expected tool calls of the client-tool items of type `kind` in a recording."""
    calls = []
    for item in _completed_output(folder("openai-responses") / f"{name}.sse"):
        if item["type"] != kind:
            continue
        if kind == "custom_tool_call":
            calls.append({"id": item["call_id"], "name": item["name"], "input": item["input"]})
        else:
            args = item["operation"] if kind == "apply_patch_call" else item["action"]
            tool = "apply_patch" if kind == "apply_patch_call" else "local_shell"
            calls.append(
                {"id": item["call_id"], "name": tool, "arguments": args, "arguments_raw": None}
            )
    assert calls, f"{name}: no {kind} item"
    return calls


_NO_FINISH = (
    "no chunk carries a finish_reason, but [DONE] (and the usage chunk) arrived: the response "
    "is complete, so the finish is inferred ({}) instead of the reference rule's null finish "
    "(which a strict checker turns into TRANSPORT)"
)
_CLIENT_ITEM = (
    "the reference rule lists every non-function_call item as a server tool call; a {} is a "
    "call the client executes, so it is a tool call here (MANIFEST: compare on item_types), "
    "taken from the response.completed output"
)

OVERRULED: dict[str, Overrule] = {
    "openai-chat/llm-openrouter-novita-kimi-no-finish-repeated-tool-header": Overrule(
        _NO_FINISH.format("a tool call came: tool-calls"),
        replace={"finish": "tool_calls"},
        inferred=True,
    ),
    "openai-chat/pyd-snowflake-cortex-claude-thinking": Overrule(
        _NO_FINISH.format("stop"), replace={"finish": "stop"}, inferred=True
    ),
    "openai-chat/pyd-snowflake-cortex-text": Overrule(
        _NO_FINISH.format("stop"), replace={"finish": "stop"}, inferred=True
    ),
    "openai-responses/vercel-resp-apply-patch": Overrule(
        _CLIENT_ITEM.format("apply_patch_call"),
        replace={"tool_calls": ("vercel-resp-apply-patch", "apply_patch_call")},
    ),
    "openai-responses/vercel-resp-local-shell": Overrule(
        _CLIENT_ITEM.format("local_shell_call"),
        replace={"tool_calls": ("vercel-resp-local-shell", "local_shell_call")},
    ),
    "openai-responses/vercel-resp-custom-tool-handwritten": Overrule(
        _CLIENT_ITEM.format("custom_tool_call (a free-text tool: its input is the raw text)"),
        replace={"tool_calls": ("vercel-resp-custom-tool-handwritten", "custom_tool_call")},
    ),
    "openai-responses/pyd-resp-client-tool-search": Overrule(
        "the only output is a client tool_search_call item: it is kept whole in the replay "
        "envelope (content), so the completed response is a stop, not EMPTY_RESPONSE "
        "(which would be retried and paid for again)",
        outcome=("stop", None),
    ),
    "openai-responses/vercel-resp-mcp-approval-request": Overrule(
        "the output is an mcp_list_tools and an mcp_approval_request item (plus reasoning): both "
        "are kept whole in the replay envelope, so the completed response is a stop, not "
        "EMPTY_RESPONSE",
        outcome=("stop", None),
    ),
    "anthropic-messages/vercel-anth-advisor-stop-reasons-handwritten": Overrule(
        "the answer is server_tool_use + advisor_tool_result blocks only: server-tool output is "
        "content (kept whole in the replay envelope), so end_turn is a stop, not EMPTY_RESPONSE",
        outcome=("stop", None),
    ),
}
"""The expected values of the collection these tests overrule, by ``folder/stem``."""


def expectation(name: str, path: Path) -> tuple[dict[str, Any], Overrule | None]:
    """The recording's expected result with any overrule applied, and the overrule."""
    expected: dict[str, Any] = json.loads(path.with_suffix(".expected.json").read_text())
    rule = OVERRULED.get(f"{name}/{path.stem}")
    if rule is not None:
        for key, value in rule.replace.items():
            expected[key] = _client_calls(*value) if key == "tool_calls" else value
    return expected, rule


def kept_parts(expected: dict[str, Any]) -> int:
    """How many parts of the recording no content block carries (kept whole in the envelope),
    counted from the collection's own inventory of block, item and part types."""
    extras = expected["extras"]
    if "block_types" in extras:
        return sum(t not in _CONTENT_BLOCKS for t in extras["block_types"])
    if "item_types" in extras:
        return sum(t not in _CONTENT_ITEMS for t in extras["item_types"])
    if "part_kinds" in extras:
        return sum(n for k, n in extras["part_kinds"].items() if k not in _CONTENT_PARTS)
    return 0


def body_text(path: Path) -> str:
    """The recording as text (an event stream's Anthropic events decoded from their frames)."""
    raw = path.read_bytes()
    if path.suffix != ".eventstream":
        return raw.decode()
    events = EventStreamDecoder().feed(raw)
    out = []
    for event in events:
        payload = msgspec.json.decode(event.data)
        out.append(base64.b64decode(payload["bytes"]).decode() if "bytes" in payload else "")
    return "\n".join(out)


def check_forward_compat(
    path: Path, asm: BlockAssembler, expected: dict[str, Any], rule: Overrule | None
) -> None:
    """What forward compatibility adds to a completed response's replay envelope: every part no
    block carries is kept there (as many as the collection's inventory counts), every label it
    reports names a type the recording holds (once), and the finish says it was inferred exactly
    when the recording has no finish signal."""
    state = asm.replay_state
    if state is None:
        assert asm.finish.kind in ("error", "aborted")
        return
    response = state.response
    extras = response.get("extras", {})
    assert (extras.get("finish") == "inferred") == bool(rule and rule.inferred), extras
    entries = state.blocks or ()
    kept = [raw for e in entries for raw in e.get("opaque", ())]
    kept += list(response.get("opaque_tail", ()))
    assert len(kept) == kept_parts(expected)
    for raw in kept:
        assert json.loads(raw)  # each kept part is one JSON value, byte for byte as it came
    labels = list(extras.get("unknown", ()))
    assert len(labels) == len(set(labels))
    text = body_text(path)
    for label in labels:
        kind, _, name = label.partition(":")
        assert kind in ("event", "item", "block", "part", "delta", "tool_call"), label
        assert f'"{name}"' in text or f"event: {name}" in text or f'"{name}":' in text, label
