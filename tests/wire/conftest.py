"""Fixtures for the wire tests (helpers live in `wire_helpers`)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable

import pytest
from wire_helpers import Conn, RawServer

from modelwire.wire.http import close_sessions


@pytest.fixture(autouse=True)
async def _close_pooled_sessions() -> AsyncIterator[None]:
    yield
    await close_sessions()


@pytest.fixture
async def raw_server() -> AsyncIterator[Callable[[Conn], Awaitable[RawServer]]]:
    servers: list[asyncio.Server] = []

    async def make(handler: Conn) -> RawServer:
        state = RawServer(handler)

        async def on_conn(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            state.connections += 1
            try:
                await handler(reader, writer)
            except (ConnectionError, asyncio.IncompleteReadError):
                pass
            finally:
                writer.close()
                state.closed.set()

        srv = await asyncio.start_server(on_conn, "127.0.0.1", 0)
        servers.append(srv)
        port = srv.sockets[0].getsockname()[1]
        state.url = f"http://127.0.0.1:{port}"
        return state

    yield make
    for srv in servers:
        srv.close()
