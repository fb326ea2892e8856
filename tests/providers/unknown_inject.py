"""Unknown things put into recorded streams: a body is parsed into its events (SSE, or AWS event
stream frames, whose ``chunk`` payloads may wrap base64 Anthropic events), mutated by inserting
events, items, blocks, parts, deltas and fields no translator knows (named ``x_unknown…``), and
serialized back. `summary` is the assembled result a mutation must leave unchanged: finish (and
failure code), blocks, the streamed deltas, usage and the replay envelope without what forward
compatibility adds (kept parts, the report)."""

from __future__ import annotations

import base64
import json
import random
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from modelwire.adapters.deepseek.translate import Translator as DeepSeekTranslator
from modelwire.adapters.providers.protocols import translate_sse
from modelwire.assembler import BlockAssembler
from modelwire.vocab import Error, ReasoningDelta, StreamChunk, TextDelta, ToolCallDelta
from modelwire.wire.eventstream import EventStreamDecoder, encode_message
from modelwire.wire.pump import translate_reads
from modelwire.wire.sse import SseDecoder

Json = Any
"""A decoded JSON value (the events are plain decoded JSON)."""


@dataclass
class Event:
    """One event of a stream: its name (SSE ``event:``, event-stream ``:event-type``), its data
    text exactly as recorded (`data` is its decoded JSON, None when it is none, e.g. ``[DONE]``)
    and whether it is a base64-wrapped Anthropic event of an event-stream ``chunk``, or an
    event-stream exception."""

    name: str | None
    text: str
    wrapped: bool = False
    exception: bool = False

    @property
    def data(self) -> Json:
        try:
            return json.loads(self.text)
        except ValueError:
            return None


def new_event(name: str | None, data: Json) -> Event:
    """An inserted event (compact JSON)."""
    return Event(name, json.dumps(data, separators=(",", ":")))


def parse(body: bytes, binary: bool) -> list[Event]:
    """The events of a recorded body."""
    if not binary:
        decoder = SseDecoder()
        return [Event(e.event, e.data) for e in (*decoder.feed(body), *decoder.close())]
    out = []
    for e in EventStreamDecoder().feed(body):
        name = e.event or ""
        payload = Event(name, e.data).data
        if name == "chunk" and isinstance(payload, dict) and "bytes" in payload:
            out.append(Event(None, base64.b64decode(payload["bytes"]).decode(), wrapped=True))
        else:
            out.append(Event(name, e.data, exception=name.startswith(("exception:", "error:"))))
    return out


def serialize(events: list[Event], binary: bool) -> bytes:
    """A body of `events` (the inverse of `parse`: each event's text as it is)."""
    if not binary:
        out = []
        for e in events:
            head = f"event: {e.name}\n" if e.name else ""
            lines = "".join(f"data: {line}\n" for line in e.text.split("\n"))
            out.append(f"{head}{lines}\n")
        return "".join(out).encode()
    frames = []
    for e in events:
        if e.wrapped:
            inner = base64.b64encode(e.text.encode()).decode()
            payload = json.dumps({"bytes": inner, "p": "abc"}).encode()
            headers = {":message-type": "event", ":event-type": "chunk"}
        elif e.exception:
            kind, _, name = (e.name or "").partition(":")
            key = ":exception-type" if kind == "exception" else ":error-code"
            headers, payload = {":message-type": kind, key: name}, e.text.encode()
        else:
            headers = {":message-type": "event", ":event-type": e.name or ""}
            payload = e.text.encode()
        headers[":content-type"] = "application/json"
        frames.append(encode_message(headers, payload))
    return b"".join(frames)


def translate(kind: str, body: bytes) -> list[StreamChunk]:
    """The chunks of `body` through the translator of `kind` (an api, or ``deepseek``)."""
    if kind == "deepseek":
        out: list[StreamChunk] = []
        translate_reads([body], DeepSeekTranslator(), out)
        return out
    return translate_sse(kind, [body], provider="fuzz-route", model="fuzz-model")


def summary(chunks: list[StreamChunk]) -> tuple[object, ...]:
    """What unknown things must never change."""
    asm = BlockAssembler()
    for chunk in chunks:
        asm.push(chunk)
    finish = asm.finish
    code = finish.failure.code if isinstance(finish, Error) else None
    blocks = asm.interrupted_blocks() if isinstance(finish, Error) else asm.blocks()
    streamed = (
        "".join(c.text for c in chunks if isinstance(c, TextDelta)),
        "".join(c.text for c in chunks if isinstance(c, ReasoningDelta)),
        [(c.index, c.arguments_delta) for c in chunks if isinstance(c, ToolCallDelta)],
    )
    state = asm.replay_state
    envelope: object = None
    if state is not None:
        response = state.response
        kept = {"extras", "opaque_tail"}
        if isinstance(response, dict) or hasattr(response, "items"):
            response = {k: v for k, v in response.items() if k not in kept}
        entries = [
            {k: v for k, v in e.items() if k != "opaque"} if hasattr(e, "items") else e
            for e in state.blocks or ()
        ]
        envelope = (response, entries)
    return finish.kind, code, blocks, streamed, asm.usage, envelope


# ---- the mutations -------------------------------------------------------------------------


def _value(rng: random.Random) -> Json:
    return rng.choice(
        [
            None,
            7,
            -1.5,
            "x",
            True,
            [1, "a", None],
            {"x_nested": {"y": [True, {"z": "w"}]}},
            {"type": "x_unknown_thing", "text": "not an answer"},
        ]
    )


def _with_field(text: str, path: tuple[str, ...], rng: random.Random) -> str:
    """`text` with an unknown field put first into the object at `path` (the top level, else
    the first object that key opens, e.g. ``"delta":{``, or the first of its list); the rest of
    the text stays byte for byte as it was."""
    if path:
        found = re.search(rf'(?<!\\)"{re.escape(path[-1])}"\s*:\s*\[?\s*\{{', text)
        if found is None:
            return text
        at = found.end()
    else:
        at = text.index("{") + 1
    rest = text[at:].lstrip()
    sep = "" if rest.startswith("}") else ","
    field = f'"x_unknown_{rng.randrange(10**6)}":{json.dumps(_value(rng))}{sep}'
    return text[:at] + field + text[at:]


def _end(events: list[Event], is_end: Callable[[Event], bool]) -> int:
    """The index of the first end marker (insertions go before it), else the length."""
    return next((i for i, e in enumerate(events) if is_end(e)), len(events))


def _insert(events: list[Event], rng: random.Random, end: int, *new: Event) -> None:
    """Insert `new`, in order, at random positions before `end` (the end marker)."""
    for k, at in enumerate(sorted(rng.randint(0, end) for _ in new)):
        events.insert(at + k, new[k])


@dataclass(frozen=True)
class Family:
    """How one protocol family's streams take unknown things."""

    field_paths: tuple[tuple[str, ...], ...]
    is_end: Callable[[Event], bool]
    unknown_event: Callable[[random.Random, int], list[Event]]
    unknown_part: Callable[[random.Random, int], list[Event]]
    field_filter: Callable[[Event], bool] = lambda e: True
    unknown_delta: Callable[[list[Event], random.Random], tuple[int, Event] | None] | None = None
    """Where and what an unknown delta of a block the stream opens is (None: no such blocks)."""


def _chat_end(e: Event) -> bool:
    return e.text.strip() == "[DONE]"


def _chat_event(rng: random.Random, k: int) -> list[Event]:
    name = rng.choice([None, "x-unknown"])
    return [new_event(name, {"object": "x.unknown.event", "x_unknown_event": _value(rng)})]


def _chat_part(rng: random.Random, k: int) -> list[Event]:
    call = {"index": 900 + k, "id": f"xu_{k}", "type": "x_unknown_call", "x_unknown_call": {}}
    return [new_event(None, {"choices": [{"index": 0, "delta": {"tool_calls": [call]}}]})]


def _mistral_part(rng: random.Random, k: int) -> list[Event]:
    part = {"type": "x_unknown_chunk", "x": _value(rng)}
    return [new_event(None, {"choices": [{"index": 0, "delta": {"content": [part]}}]})]


def _responses_end(e: Event) -> bool:
    return isinstance(e.data, dict) and e.data.get("type") in (
        "response.completed",
        "response.incomplete",
        "response.failed",
    )


def _responses_event(rng: random.Random, k: int) -> list[Event]:
    name = f"response.x_unknown_event_{k}"
    return [new_event(name, {"type": name, "output_index": rng.randrange(4), "x": _value(rng)})]


def _responses_item(rng: random.Random, k: int) -> list[Event]:
    item = {"type": "x_unknown_item", "id": f"xu_{k}", "x": _value(rng)}
    added = {"type": "response.output_item.added", "output_index": 900 + k, "item": item}
    done = {"type": "response.output_item.done", "output_index": 900 + k, "item": item}
    return [
        new_event("response.output_item.added", added),
        new_event("response.output_item.done", done),
    ]


def _responses_fields(e: Event) -> bool:
    """Items whose whole JSON is a replay signature or item (reasoning, client calls) keep
    every field by design: fields go elsewhere."""
    item = e.data.get("item") if isinstance(e.data, dict) else None
    return not (isinstance(item, dict) and item.get("type") not in ("message", "function_call"))


def _anthropic_end(e: Event) -> bool:
    return isinstance(e.data, dict) and e.data.get("type") == "message_stop"


def _anthropic_event(rng: random.Random, k: int) -> list[Event]:
    name = f"x_unknown_event_{k}"
    return [new_event(name, {"type": name, "x": _value(rng)})]


def _anthropic_block(rng: random.Random, k: int) -> list[Event]:
    index = 900 + k
    block = {"type": "x_unknown_block", "x": _value(rng)}
    start = {"type": "content_block_start", "index": index, "content_block": block}
    delta = {"type": "content_block_delta", "index": index, "delta": {"type": "x_unknown_delta"}}
    stop = {"type": "content_block_stop", "index": index}
    return [
        new_event("content_block_start", start),
        new_event("content_block_delta", delta),
        new_event("content_block_stop", stop),
    ]


def _inside_block(
    events: list[Event], rng: random.Random, start: str, stop: str, key: str
) -> tuple[int, int] | None:
    """A block the stream opens (event named `start`) and closes (`stop`): its index (field
    `key`) and a position strictly between the two events."""
    opened = {}
    spans = []
    for i, e in enumerate(events):
        data = e.data
        if not isinstance(data, dict) or not isinstance(data.get(key), int):
            continue
        kind = data.get("type") or e.name
        if kind == start:
            opened[data[key]] = i
        elif kind == stop and data[key] in opened:
            spans.append((data[key], opened.pop(data[key]), i))
    if not spans:
        return None
    index, first, last = rng.choice(spans)
    return index, rng.randint(first + 1, last)


def _anthropic_delta(events: list[Event], rng: random.Random) -> tuple[int, Event] | None:
    found = _inside_block(events, rng, "content_block_start", "content_block_stop", "index")
    if found is None:
        return None
    index, at = found
    delta = {"type": "x_unknown_delta", "x": _value(rng)}
    data = {"type": "content_block_delta", "index": index, "delta": delta}
    return at, new_event("content_block_delta", data)


def _converse_delta(events: list[Event], rng: random.Random) -> tuple[int, Event] | None:
    found = _inside_block(events, rng, "contentBlockDelta", "contentBlockStop", "contentBlockIndex")
    if found is None:
        return None
    index, at = found
    data = {"contentBlockIndex": index, "delta": {"xUnknownDelta": {"x": _value(rng)}}}
    return at, new_event("contentBlockDelta", data)


def _gemini_end(e: Event) -> bool:
    candidates = e.data.get("candidates") if isinstance(e.data, dict) else None
    return bool(candidates) and any(c.get("finishReason") for c in candidates)


def _gemini_event(rng: random.Random, k: int) -> list[Event]:
    return [new_event(None, {"x_unknown_event": _value(rng)})]


def _gemini_part(rng: random.Random, k: int) -> list[Event]:
    part = {f"x_unknown_part_{k}": {"x": _value(rng)}}
    content = {"role": "model", "parts": [part]}
    return [new_event(None, {"candidates": [{"content": content, "index": 0}]})]


def _converse_end(e: Event) -> bool:
    return e.name == "metadata"


def _converse_event(rng: random.Random, k: int) -> list[Event]:
    return [new_event(f"xUnknownEvent{k}", {"x": _value(rng)})]


def _converse_block(rng: random.Random, k: int) -> list[Event]:
    index = 900 + k
    return [
        new_event(
            "contentBlockStart", {"contentBlockIndex": index, "start": {"xUnknownBlock": {}}}
        ),
        new_event(
            "contentBlockDelta", {"contentBlockIndex": index, "delta": {"xUnknownDelta": {}}}
        ),
        new_event("contentBlockStop", {"contentBlockIndex": index}),
    ]


CHAT_FIELDS = (
    (),
    ("choices",),
    ("choices", "delta"),
    ("usage",),
    ("choices", "delta", "tool_calls"),
    ("choices", "delta", "tool_calls", "function"),
)
FAMILIES: dict[str, Family] = {
    "chat": Family(CHAT_FIELDS, _chat_end, _chat_event, _chat_part),
    "deepseek": Family(CHAT_FIELDS, _chat_end, _chat_event, _chat_part),
    "mistral": Family(CHAT_FIELDS, _chat_end, _chat_event, _mistral_part),
    "responses": Family(
        ((), ("response",), ("response", "usage"), ("item",), ("part",)),
        _responses_end,
        _responses_event,
        _responses_item,
        _responses_fields,
    ),
    "anthropic": Family(
        (
            (),
            ("message",),
            ("message", "usage"),
            ("content_block",),
            ("delta",),
            ("usage",),
        ),
        _anthropic_end,
        _anthropic_event,
        _anthropic_block,
        unknown_delta=_anthropic_delta,
    ),
    "gemini": Family(
        (
            (),
            ("candidates",),
            ("candidates", "content"),
            ("candidates", "content", "parts"),
            ("usageMetadata",),
        ),
        _gemini_end,
        _gemini_event,
        _gemini_part,
    ),
    "converse": Family(
        ((), ("delta",), ("start",), ("usage",), ("metrics",)),
        _converse_end,
        _converse_event,
        _converse_block,
        unknown_delta=_converse_delta,
    ),
}


def mutate(
    events: list[Event], family: Family, ops: list[tuple[str, int]], parts: bool
) -> list[Event]:
    """`events` with the unknown things `ops` ask for: ``field`` (a field in one of the
    family's objects), ``event`` (an event of an unknown type), ``part`` (an item, block, part
    or tool call of an unknown type: content kept whole, so only when `parts`, i.e. for a stream
    that is not empty without it), ``frame`` (an event-stream frame of an unknown type, for a
    stream of wrapped events), ``delta`` (a delta of an unknown type on a block the stream opens,
    while it is open). Insertions go before the stream's end marker."""
    events = [Event(e.name, e.text, e.wrapped, e.exception) for e in events]
    wrapped = any(e.wrapped for e in events)
    for k, (op, seed) in enumerate(ops):
        rng = random.Random(seed)
        end = _end(events, family.is_end)
        new: list[Event] = []
        if op == "field":
            targets = [e for e in events if isinstance(e.data, dict) and family.field_filter(e)]
            if targets:
                event = rng.choice(targets)
                event.text = _with_field(event.text, rng.choice(family.field_paths), rng)
        elif op == "event":
            new = family.unknown_event(rng, k)
        elif op == "part" and parts:
            new = family.unknown_part(rng, k)
        elif op == "delta" and family.unknown_delta is not None:
            found = family.unknown_delta(events, rng)
            if found is not None:
                found[1].wrapped = wrapped
                events.insert(*found)
        elif op == "frame" and wrapped:
            _insert(events, rng, end, new_event(f"xUnknownFrame{k}", {"x": _value(rng)}))
        for e in new:
            e.wrapped = wrapped
        if new:
            _insert(events, rng, end, *new)
    return events
