"""The fault scenarios: what the server does on the wire, and what each adapter must end with.

A `Scenario` has a `name`, a `behaviour(kind)` factory (the server side, per protocol) and an
`expect(kind)` giving the one terminal outcome every adapter must reach through `rt.stream()`:
a finish kind, a failure code, and optionally the exact assembled text or Retry-After.
"""

from __future__ import annotations

import asyncio
import email.utils
import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

from reliability_server import Behaviour, Conn, chunked, reset
from reliability_wire import IDLE_MS as STALL_IDLE_MS
from reliability_wire import done_event, good_events, sse, text_events

__all__ = ["BIG", "SCENARIOS", "Expect", "Scenario", "sse_response"]

SSE_CHUNKED: Final = (
    b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
    b"Transfer-Encoding: chunked\r\nx-request-id: req-rel\r\n\r\n"
)
SSE_EOF: Final = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n"
BIG: Final = 50 * 1024 * 1024
TEXT: Final = "Hello, reliable world"


@dataclass(frozen=True)
class Expect:
    """The terminal outcome: `kind` ``stop`` or ``error``; `code` for errors; optional checks."""

    kind: str
    code: str | None = None
    text: str | None = None
    status: int | None = None
    retry_after_ms: float | None = None
    retry_after_approx: bool = False
    bounded: bool = False  # the client must hang up long before the 50 MB body is sent


STOP: Final = Expect("stop", text=TEXT)


@dataclass(frozen=True)
class Scenario:
    name: str
    behaviour: Callable[[str], Behaviour]
    expect: Callable[[str], Expect]
    # The client's idle budget. Only the stall scenarios wait for it to fire; every other scenario
    # gets a budget a loaded CI machine cannot exhaust, so a slow loop never turns its expected
    # failure into a TIMEOUT.
    idle_ms: float = 10_000.0


def _done_protocol(kind: str) -> bool:
    return kind in ("deepseek", "openai-completions")


def _ended_early(kind: str) -> Expect:
    """A body that ends (cleanly) before the protocol's end marker."""
    return Expect("error", "STREAM_CLOSED" if kind == "deepseek" else "TRANSPORT")


# ---- behaviours ---------------------------------------------------------------------------------


def sse_response(events: list[bytes], *, eof: bool = False, gap: float = 0.0) -> Behaviour:
    """A 200 SSE response, one write per event; chunked keep-alive, or close-delimited (`eof`)."""

    async def behave(conn: Conn, reader: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
        await conn.send(w, SSE_EOF if eof else SSE_CHUNKED)
        for event in events:
            await conn.send(w, event if eof else chunked([event])[:-5])
            if gap:
                await asyncio.sleep(gap)
        if eof:
            w.close()
        else:
            await conn.send(w, b"0\r\n\r\n")
            conn.complete = True

    return behave


def _reset_before_headers(kind: str) -> Behaviour:
    async def behave(conn: Conn, reader: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
        reset(w)

    return behave


def _reset_mid_body(kind: str) -> Behaviour:
    events = good_events(kind)[:2]

    async def behave(conn: Conn, reader: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
        await conn.send(w, SSE_CHUNKED + chunked(events)[:-5])
        await asyncio.sleep(0.02)
        reset(w)

    return behave


def _stall_before_first_byte(kind: str) -> Behaviour:
    async def behave(conn: Conn, reader: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
        await reader.read()  # silence until the client gives up

    return behave


def _stall_mid_body(kind: str) -> Behaviour:
    events = good_events(kind)[:3]

    async def behave(conn: Conn, reader: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
        await conn.send(w, SSE_CHUNKED + chunked(events)[:-5])
        await reader.read()

    return behave


def _drip(kind: str) -> Behaviour:
    body = b"".join(good_events(kind))

    async def behave(conn: Conn, reader: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
        await conn.send(w, SSE_EOF)
        for i in range(len(body)):
            await conn.send(w, body[i : i + 1])
            await asyncio.sleep(0.0003)
        w.close()

    return behave


def _status(code: int, retry_after: str | None, body: bytes, ctype: str) -> Behaviour:
    if retry_after == "@in-an-hour":  # rendered when the scenario runs, not at import
        retry_after = email.utils.formatdate(time.time() + 3600, usegmt=True)
    extra = f"Retry-After: {retry_after}\r\n" if retry_after is not None else ""
    head = (
        f"HTTP/1.1 {code} Oops\r\nContent-Type: {ctype}\r\n{extra}x-request-id: req-{code}\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    ).encode()

    async def behave(conn: Conn, reader: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
        await conn.send(w, head + body)
        conn.complete = True

    return behave


def _big(status: int, ctype: str, piece: bytes) -> Behaviour:
    """A 50 MB body generated lazily in 64 KiB writes; stops when the client hangs up."""
    reps = 65536 // len(piece)
    block = piece * reps
    head = (
        f"HTTP/1.1 {status} Big\r\nContent-Type: {ctype}\r\nContent-Length: {BIG}\r\n\r\n"
    ).encode()

    async def behave(conn: Conn, reader: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
        await conn.send(w, head)
        left = BIG
        while left > 0:
            data = block if left >= len(block) else block[:left]
            await conn.send(w, data)
            left -= len(data)
        conn.complete = True

    return behave


def _split_utf8(kind: str) -> Behaviour:
    body = b"".join(good_events(kind, "caf\u00e9 \u20ac \U0001f600 ok"))
    cuts = []
    for marker in ("\u00e9", "\u20ac", "\U0001f600"):
        encoded = marker.encode()
        at = body.index(encoded)
        cuts.append(at + 1)
    cuts.sort()

    async def behave(conn: Conn, reader: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
        await conn.send(w, SSE_EOF)
        start = 0
        for cut in [*cuts, len(body)]:
            await conn.send(w, body[start:cut])
            await asyncio.sleep(0.005)  # separate reads: the code point straddles them
            start = cut
        w.close()

    return behave


def _truncated_utf8(kind: str) -> Behaviour:
    """A read that ends inside a code point whose continuation never comes: the first two bytes
    of U+20AC end one frame, the next frame goes on with ASCII (decoded as U+FFFD, not a crash)."""
    body = b"".join(good_events(kind, "MARKER"))
    body = body.replace(b'"MA"', b'"A\xe2\x82"')
    body = body.replace(b'"MARKER"', b'"A\xe2\x82RKER"')
    cut = body.index(b"\xe2\x82") + 2

    async def behave(conn: Conn, reader: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
        await conn.send(w, SSE_EOF + body[:cut])
        await asyncio.sleep(0.01)
        await conn.send(w, body[cut:])
        w.close()

    return behave


def _events_variant(
    transform: Callable[[str, list[bytes]], list[bytes]],
) -> Callable[[str], Behaviour]:
    def factory(kind: str) -> Behaviour:
        return sse_response(transform(kind, good_events(kind)))

    return factory


def _duplicate_fields(kind: str, events: list[bytes]) -> list[bytes]:
    """Fields duplicated and out of order: id/retry/unknown lines first, event after data, the
    JSON split over two data lines, a repeated event line (the last one counts)."""
    out = []
    for ev in events:
        lines = ev.decode().split("\n")
        data = next(x for x in lines if x.startswith("data: "))[6:]
        name = next((x[7:] for x in lines if x.startswith("event: ")), None)
        mid = data.index(",") + 1 if data.startswith("{") and "," in data else len(data)
        block = [
            "id: 7",
            "retry: 10",
            "x-unknown: y",
            "event: bogus",
            f"data: {data[:mid]}",
            ": a comment between data lines",
            "id: 8",
        ]
        if mid < len(data):
            block.append(f"data:{data[mid:]}")
        if name:
            block.append(f"event: {name}")
        out.append(("\r\n".join(block) + "\r\n\r\n").encode())
    return out


def _out_of_order_events(kind: str, events: list[bytes]) -> list[bytes]:
    """A comment-only prelude, a BOM, and the event ``id``/``event`` fields after ``data``."""
    return [b"\xef\xbb\xbf: prelude\n\n", b"event: ping\n\n", *events]


def _done_missing(kind: str) -> Callable[[str], Behaviour]:
    def factory(k: str) -> Behaviour:
        events = good_events(k)
        return sse_response(events[:-1], eof=True)

    return factory


def _done_repeated(kind: str, events: list[bytes]) -> list[bytes]:
    return [*events, events[-1], done_event(), events[-1]]


def _extra_after_done(kind: str, events: list[bytes]) -> list[bytes]:
    extra = text_events(kind, ["EXTRA"])[1:]
    return [*events, *extra, sse({"garbage": True}), b"data: {not json\n\n"]


def _stall_after_done(kind: str) -> Behaviour:
    """The complete answer, then silence with the connection held open (no chunk terminator)."""
    events = good_events(kind)

    async def behave(conn: Conn, reader: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
        await conn.send(w, SSE_CHUNKED + chunked(events)[:-5])
        await reader.read()

    return behave


def _html_200(kind: str) -> Behaviour:
    body = b"<html><body><h1>Welcome to the captive portal</h1></body></html>\n" * 4
    head = (
        b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n"
        + f"Content-Length: {len(body)}\r\n\r\n".encode()
    )

    async def behave(conn: Conn, reader: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
        await conn.send(w, head + body)
        conn.complete = True

    return behave


def _credential(head: bytes) -> str:
    """The credential the client sent (Bearer token or x-api-key), as the server saw it."""
    for line in head.decode("latin-1").split("\r\n")[1:]:
        name, _, value = line.partition(":")
        value = value.strip()
        if name.strip().lower() == "authorization":
            return value.removeprefix("Bearer ").strip()
        if name.strip().lower() == "x-api-key":
            return value
    raise AssertionError("the client sent no credential")


def _echo_key_status(kind: str) -> Behaviour:
    """A 401 whose error text (and a header) echo the caller's key and Authorization header."""

    async def behave(conn: Conn, reader: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
        key = _credential(conn.head)
        text = f"Incorrect API key provided: {key} (Authorization: Bearer {key})"
        body = json.dumps({"error": {"message": text, "type": "invalid_request_error"}}).encode()
        head = (
            f"HTTP/1.1 401 Unauthorized\r\nContent-Type: application/json\r\n"
            f"x-echo: {key}\r\nContent-Length: {len(body)}\r\n\r\n"
        ).encode()
        await conn.send(w, head + body)
        conn.complete = True

    return behave


def _stream_error_event(kind: str, text: str) -> bytes:
    if kind in ("deepseek", "openai-completions"):
        return sse({"error": {"message": text, "type": "server_error", "code": 500}})
    if kind == "openai-responses":
        return sse({"type": "error", "code": "server_error", "message": text})
    return sse({"type": "error", "error": {"type": "api_error", "message": text}}, "error")


def _echo_key_in_stream(kind: str) -> Behaviour:
    """A 200 stream whose in-band error event quotes the caller's key."""

    async def behave(conn: Conn, reader: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
        key = _credential(conn.head)
        events = good_events(kind)[:2]
        events.append(_stream_error_event(kind, f"upstream rejected key {key} for this model"))
        if kind in ("deepseek", "openai-completions"):
            events.append(done_event())
        await sse_response(events)(conn, reader, w)

    return behave


# ---- the table ----------------------------------------------------------------------------------

_HTML_ERROR: Final = (
    b"<!DOCTYPE html><html><head><title>502 Bad Gateway</title></head>"
    b"<body><center><h1>502 Bad Gateway</h1></center><hr><center>nginx</center></body></html>"
)


def _retry_after_variants() -> list[tuple[str, str | None, float | None, bool]]:
    return [
        ("none", None, None, False),
        ("seconds", "7", 7000.0, False),
        ("http-date", "@in-an-hour", 3_600_000.0, True),
        ("garbage", "soon-ish", None, False),
        ("negative", "-5", None, False),
        ("huge", "9" * 30, None, False),
    ]


def _status_scenarios() -> list[Scenario]:
    out = []
    for code in (429, 500, 502, 503, 529):
        failure = "RATE_LIMIT" if code == 429 else "SERVER"
        body = json.dumps({"error": {"message": f"status {code} says no", "type": "x"}}).encode()
        for label, header, ms, approx in _retry_after_variants():
            out.append(
                Scenario(
                    f"http-{code}-retry-after-{label}",
                    lambda kind, c=code, h=header, b=body: _status(c, h, b, "application/json"),
                    lambda kind, f=failure, c=code, m=ms, a=approx: Expect(
                        "error", f, status=c, retry_after_ms=m, retry_after_approx=a
                    ),
                )
            )
    return out


def _const(expect: Expect) -> Callable[[str], Expect]:
    return lambda kind: expect


SCENARIOS: Final[list[Scenario]] = [
    Scenario("baseline", lambda k: sse_response(good_events(k)), _const(STOP)),
    Scenario("reset-before-headers", _reset_before_headers, _const(Expect("error", "TRANSPORT"))),
    Scenario("reset-mid-body", _reset_mid_body, _const(Expect("error", "TRANSPORT"))),
    Scenario(
        "stall-before-first-byte",
        _stall_before_first_byte,
        _const(Expect("error", "TIMEOUT")),
        idle_ms=STALL_IDLE_MS,
    ),
    Scenario(
        "stall-mid-body", _stall_mid_body, _const(Expect("error", "TIMEOUT")), idle_ms=STALL_IDLE_MS
    ),
    Scenario("slow-drip-one-byte", _drip, _const(STOP)),
    *_status_scenarios(),
    Scenario(
        "html-502-page",
        lambda k: _status(502, None, _HTML_ERROR, "text/html"),
        _const(Expect("error", "SERVER", status=502)),
    ),
    Scenario("html-200-page", _html_200, _ended_early),
    Scenario(
        "error-body-50mb",
        lambda k: _big(500, "text/html", b"<p>overloaded</p>"),
        _const(Expect("error", "SERVER", status=500, bounded=True)),
    ),
    Scenario(
        "sse-body-50mb-no-newline",
        lambda k: _big(200, "text/event-stream", b"data: xxxxxxxxxxxxxxxx"),
        _const(Expect("error", "MALFORMED_RESPONSE", bounded=True)),
    ),
    Scenario(
        "sse-body-50mb-comments",
        lambda k: _big(200, "text/event-stream", b": keep-alive padding\n"),
        _ended_early,
    ),
    Scenario(
        "utf8-split-across-reads",
        _split_utf8,
        _const(Expect("stop", text="caf\u00e9 \u20ac \U0001f600 ok")),
    ),
    Scenario(
        "utf8-truncated-at-frame-edge",
        _truncated_utf8,
        _const(Expect("stop", text="A\ufffdRKER")),
    ),
    Scenario("sse-duplicate-fields", _events_variant(_duplicate_fields), _const(STOP)),
    Scenario("sse-out-of-order-fields", _events_variant(_out_of_order_events), _const(STOP)),
    Scenario(
        "done-missing",
        _done_missing("x"),
        lambda k: _ended_early(k) if k != "openai-completions" else STOP,
    ),
    Scenario("done-repeated", _events_variant(_done_repeated), _const(STOP)),
    Scenario("done-then-more-data", _events_variant(_extra_after_done), _const(STOP)),
    Scenario("done-then-stall", _stall_after_done, _const(STOP)),
    Scenario(
        "http-401-echoes-the-key", _echo_key_status, _const(Expect("error", "AUTH", status=401))
    ),
    Scenario(
        "stream-error-echoes-the-key",
        _echo_key_in_stream,
        lambda k: Expect("error", "SERVER" if k != "openai-responses" else "PI_AI_ERROR"),
    ),
]
