"""Helpers for wire tests: raw asyncio servers for byte-level HTTP faults."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

Conn = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


@dataclass
class RawServer:
    """A raw TCP server on 127.0.0.1; `handler` runs per connection; counts connections/closes."""

    handler: Conn
    url: str = ""
    connections: int = 0
    closed: asyncio.Event = field(default_factory=asyncio.Event)


async def read_request(reader: asyncio.StreamReader) -> bytes:
    head = await reader.readuntil(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n"):
        if line.lower().startswith(b"content-length:"):
            length = int(line.split(b":", 1)[1])
    return head + await reader.readexactly(length)


def chunk(data: bytes) -> bytes:
    """One HTTP/1.1 chunked-encoding chunk."""
    return f"{len(data):x}\r\n".encode() + data + b"\r\n"


SSE_HEAD = (
    b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"
)
