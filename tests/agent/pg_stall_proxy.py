"""A raw TCP proxy on 127.0.0.1 in front of the test PostgreSQL server that can freeze: once
frozen it stops forwarding in both directions (bytes stay in the kernel's buffers, connections
stay open), as when the server process is SIGSTOPped or the network blackholes — without freezing
the shared test server for anyone else."""

from __future__ import annotations

import asyncio
import contextlib
from urllib.parse import urlsplit, urlunsplit


class StallProxy:
    def __init__(self, target_url: str) -> None:
        parts = urlsplit(target_url)
        self._target = (parts.hostname or "127.0.0.1", parts.port or 5432)
        self._parts = parts
        self._server: asyncio.Server | None = None
        self._running = asyncio.Event()
        self._running.set()
        self._tasks: set[asyncio.Task[None]] = set()
        self._writers: list[asyncio.StreamWriter] = []
        self.url = ""

    async def start(self) -> StallProxy:
        self._server = await asyncio.start_server(self._accept, "127.0.0.1", 0)
        port = self._server.sockets[0].getsockname()[1]
        netloc = self._parts.netloc.rsplit("@", 1)
        user = f"{netloc[0]}@" if len(netloc) == 2 else ""
        self.url = urlunsplit(self._parts._replace(netloc=f"{user}127.0.0.1:{port}"))
        return self

    def freeze(self) -> None:
        self._running.clear()

    def thaw(self) -> None:
        self._running.set()

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        up_reader, up_writer = await asyncio.open_connection(*self._target)
        self._writers += [writer, up_writer]
        for src, dst in ((reader, up_writer), (up_reader, writer)):
            task = asyncio.create_task(self._pump(src, dst))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def _pump(self, src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
        with contextlib.suppress(ConnectionError, OSError):
            while True:
                await self._running.wait()
                data = await src.read(65536)
                if not data:
                    break
                await self._running.wait()  # frozen while reading: hold the bytes back
                dst.write(data)
                await dst.drain()
        with contextlib.suppress(Exception):
            dst.close()

    async def stop(self) -> None:
        self.thaw()
        if self._server is not None:
            self._server.close()
        for writer in self._writers:
            with contextlib.suppress(Exception):
                writer.close()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        if self._server is not None:
            await self._server.wait_closed()
