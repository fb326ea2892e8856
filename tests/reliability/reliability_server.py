"""A fault-injecting HTTP/1.1 server on 127.0.0.1 built on raw `asyncio.start_server`.

Every connection reads one request (head and body are recorded), then runs the server's current
`Behaviour` over the raw stream: it decides every byte that goes back, when, and how the
connection ends. The server counts open connections and records, per connection, whether the
*client* closed it, so a test can assert that an adapter released its socket (a connection the
server itself ends by reset or close counts as closed by the server).

A connection serves requests one after another (keep-alive) until a side closes it. A behaviour
that sent a complete keep-alive response marks it `complete` (the client may pool it); any other
behaviour either ends the connection itself or waits until the client hangs up, so a client that
never releases an unfinished response shows up as an open connection.
"""

from __future__ import annotations

import asyncio
import socket
import struct
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field

__all__ = ["Behaviour", "Conn", "FaultServer", "chunked", "closed_port", "reset"]


@dataclass
class Conn:
    """One accepted connection: its request bytes and how it ended."""

    head: bytes = b""
    body: bytes = b""
    sent: int = 0
    complete: bool = False  # a whole keep-alive response was sent: the client may pool it
    closed: bool = False
    client_closed: bool = False
    server_closed: bool = False

    async def send(self, writer: asyncio.StreamWriter, data: bytes) -> None:
        """Write `data` and wait for the socket buffer to drain."""
        writer.write(data)
        self.sent += len(data)
        await writer.drain()


Behaviour = Callable[[Conn, asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


def reset(writer: asyncio.StreamWriter) -> None:
    """Abort the connection with a TCP RST (SO_LINGER 0)."""
    sock = writer.get_extra_info("socket")
    if sock is not None:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    writer.transport.abort()


def closed_port() -> int:
    """A loopback port nothing listens on (bound and released at once)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class FaultServer:
    """The server; set `behaviour` (or queue several with `queue`) before each request."""

    behaviour: Behaviour | None = None
    conns: list[Conn] = field(default_factory=list)
    queued: list[Behaviour] = field(default_factory=list)
    requests: int = 0
    port: int = 0
    _server: asyncio.Server | None = None
    _tasks: set[asyncio.Task[None]] = field(default_factory=set)
    _changed: asyncio.Condition | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def open_connections(self) -> int:
        """Connections accepted and not yet closed by either side."""
        return sum(1 for c in self.conns if not c.closed)

    @property
    def tasks(self) -> frozenset[asyncio.Task[None]]:
        """The connection-handler tasks still running (to exclude from leak checks)."""
        return frozenset(self._tasks)

    def queue(self, *behaviours: Behaviour) -> None:
        """Answer the next requests with these behaviours, in order, before `behaviour`."""
        self.queued.extend(behaviours)

    async def start(self) -> None:
        self._changed = asyncio.Condition()
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0, backlog=2048)
        self.port = self._server.sockets[0].getsockname()[1]

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        if self._server is not None:
            await self._server.wait_closed()

    async def wait_closed(self, timeout: float = 2.0) -> int:
        """Wait until every connection is closed; returns how many are still open at timeout."""
        assert self._changed is not None
        try:
            async with asyncio.timeout(timeout), self._changed:
                await self._changed.wait_for(lambda: self.open_connections == 0)
        except TimeoutError:
            pass
        return self.open_connections

    async def _notify(self) -> None:
        assert self._changed is not None
        async with self._changed:
            self._changed.notify_all()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)  # type: ignore[arg-type]
        conn = Conn()
        self.conns.append(conn)
        try:
            while True:  # keep-alive: one request after another until a side closes
                try:
                    conn.head = await reader.readuntil(b"\r\n\r\n")
                except asyncio.IncompleteReadError:
                    conn.client_closed = True
                    break
                length = 0
                for line in conn.head.split(b"\r\n")[1:]:
                    name, _, value = line.partition(b":")
                    if name.strip().lower() == b"content-length":
                        length = int(value.strip())
                conn.body = await reader.readexactly(length)
                conn.complete = False
                self.requests += 1
                behaviour = self.queued.pop(0) if self.queued else self.behaviour
                assert behaviour is not None, "no behaviour set"
                await behaviour(conn, reader, writer)
                if writer.transport.is_closing():
                    conn.server_closed = True
                    break
                if not conn.complete:  # the behaviour waited for the client to hang up
                    conn.client_closed = True
                    break
        except (ConnectionError, asyncio.IncompleteReadError, OSError):
            conn.client_closed = not writer.transport.is_closing() or conn.client_closed
        except asyncio.CancelledError:
            conn.server_closed = True
        finally:
            conn.closed = True
            if not writer.transport.is_closing():
                writer.transport.abort()
            self._tasks.discard(task)  # type: ignore[arg-type]
            await self._notify()


def chunked(pieces: Iterable[bytes]) -> bytes:
    """Encode `pieces` as HTTP/1.1 chunks, with the terminating zero chunk."""
    out = [f"{len(p):x}\r\n".encode() + p + b"\r\n" for p in pieces if p]
    out.append(b"0\r\n\r\n")
    return b"".join(out)
