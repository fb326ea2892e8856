"""Pool hygiene of the transport (issue 31): the per-host limit and its queue, idle expiry on an
injected clock, the readability check before reuse (the stale-socket race), the connect timeout,
the DNS cache, and file descriptors: 3,000 concurrent calls under a 1,024 soft limit all succeed
and leave the process with descriptors to spare; a process out of them fails as "too many open
files"."""

from __future__ import annotations

import asyncio
import socket
import subprocess
import sys
import textwrap
from collections.abc import AsyncIterator, Callable

import pytest
from wire_helpers import read_request

from modelwire import LlmError
from modelwire.wire.dns import Resolver
from modelwire.wire.http import stream_post
from modelwire.wire.pool import Pool, get_pool, new_pool
from modelwire.wire.settings import TransportSettings
from modelwire.wire.watchdog import IdleWatchdog

_REPLY = b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok"


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


async def _drain(url: str, settings: TransportSettings | None = None) -> bytes:
    gen = stream_post(
        url,
        b"{}",
        {"Content-Type": "application/json"},
        provider="Acme",
        endpoint=url,
        watchdog=IdleWatchdog(30_000, message="idle"),
        settings=settings or TransportSettings(),
    )
    try:
        return b"".join([b async for b in gen])
    finally:
        await gen.aclose()


async def _server(
    handler: Callable[[asyncio.StreamReader, asyncio.StreamWriter], object],
) -> tuple[asyncio.Server, str]:
    async def on_conn(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            await handler(reader, writer)  # type: ignore[misc]
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()

    srv = await asyncio.start_server(on_conn, "127.0.0.1", 0)
    return srv, f"http://127.0.0.1:{srv.sockets[0].getsockname()[1]}"


async def _keep_alive(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    while True:
        await read_request(reader)
        writer.write(_REPLY)
        await writer.drain()


@pytest.fixture
async def clock() -> AsyncIterator[Clock]:
    fake = Clock()
    new_pool(asyncio.get_running_loop(), Pool(clock=fake))
    yield fake


async def test_per_host_limit_queues_the_rest_and_every_call_succeeds() -> None:
    open_now = peak = 0
    release = asyncio.Event()

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal open_now, peak
        open_now += 1
        peak = max(peak, open_now)
        try:
            while True:
                await read_request(reader)
                await release.wait()
                writer.write(_REPLY)
                await writer.drain()
        finally:
            open_now -= 1

    srv, url = await _server(handler)
    settings = TransportSettings(max_connections=3)
    calls = [asyncio.ensure_future(_drain(url, settings)) for _ in range(12)]
    while peak < 3:
        await asyncio.sleep(0.01)
    await asyncio.sleep(0.05)  # the other nine are queued, not connecting
    assert peak == 3
    release.set()
    assert await asyncio.gather(*calls) == [b"ok"] * 12
    assert peak == 3
    srv.close()


async def test_idle_connection_expires_after_keepalive_s_on_the_injected_clock(
    clock: Clock,
) -> None:
    connections = 0

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal connections
        connections += 1
        await _keep_alive(reader, writer)

    srv, url = await _server(handler)
    settings = TransportSettings(keepalive_s=15)
    assert await _drain(url, settings) == b"ok"
    clock.now += 14.9
    assert await _drain(url, settings) == b"ok"  # reused, and idle again from now
    assert connections == 1
    pool = get_pool(asyncio.get_running_loop())
    assert pool is not None and pool.idle_count() == 1
    clock.now += 15.0
    pool.sweep()  # what the timer runs
    assert pool.idle_count() == 0 and pool.open_count() == 0
    assert await _drain(url, settings) == b"ok"
    assert connections == 2
    srv.close()


async def test_stale_socket_race_succeeds_100_of_100() -> None:
    """The server closes right after each reply: its FIN is in the kernel before the next
    request, which must go out on a fresh connection every time."""

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(_REPLY)  # keep-alive by the head, closed at once
        await writer.drain()

    srv, url = await _server(handler)
    results = [await _drain(url) for _ in range(100)]
    assert results == [b"ok"] * 100
    srv.close()


async def test_connect_timeout_covers_a_tls_handshake_that_never_ends() -> None:
    async def silent(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.read()  # accepts TCP, never answers the ClientHello

    srv, url = await _server(silent)
    url = url.replace("http://", "https://")
    with pytest.raises(LlmError) as info:
        await _drain(url, TransportSettings(connect_timeout_ms=150))
    assert info.value.code == "TIMEOUT"
    assert info.value.message == f"Acme API request to {url} failed: connect timed out after 150ms"
    srv.close()


async def test_dns_cache_answers_from_memory_until_its_ttl_on_the_injected_clock(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    clock = Clock()
    resolver = Resolver(ttl_s=300, clock=clock)
    loop = asyncio.get_running_loop()
    asked: list[str] = []
    real = loop.getaddrinfo

    async def counting(host: str, *args: object, **kwargs: object) -> object:
        asked.append(host)
        return await real(host, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(loop, "getaddrinfo", counting)
    first = await resolver.resolve("localhost", 80)
    assert await resolver.resolve("localhost", 80) == first
    assert await resolver.resolve("127.0.0.1", 80)  # a literal is never looked up
    assert asked == ["localhost"]
    clock.now += 300
    await resolver.resolve("localhost", 80)
    assert asked == ["localhost", "localhost"]
    with pytest.raises(socket.gaierror):
        await resolver.resolve("no-such-host.invalid", 80)


_FD_SERVER = textwrap.dedent(
    """
    import asyncio, resource, sys
    resource.setrlimit(resource.RLIMIT_NOFILE, (8192, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))
    REPLY = b"HTTP/1.1 200 OK\\r\\ncontent-length: 2\\r\\n\\r\\nok"

    async def handler(reader, writer):
        try:
            while True:
                head = await reader.readuntil(b"\\r\\n\\r\\n")
                size = head.lower().split(b"content-length: ")[1].split(b"\\r")[0]
                await reader.readexactly(int(size))
                writer.write(REPLY)
                await writer.drain()
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()

    async def main():
        srv = await asyncio.start_server(handler, "127.0.0.1", 0, backlog=4096)
        print(srv.sockets[0].getsockname()[1], flush=True)
        await asyncio.sleep(600)

    asyncio.run(main())
    """
)

_FD_CLIENT = textwrap.dedent(
    """
    import asyncio, os, resource, sys
    from modelwire.wire.http import stream_post, close_sessions
    from modelwire.wire.settings import TransportSettings
    from modelwire.wire.watchdog import IdleWatchdog
    from modelwire import LlmError

    resource.setrlimit(resource.RLIMIT_NOFILE, (1024, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))
    url = f"http://127.0.0.1:{sys.argv[1]}"

    async def call(settings):
        gen = stream_post(url, b"{}", {}, provider="Acme", endpoint=url,
                          watchdog=IdleWatchdog(120_000, message="idle"), settings=settings)
        try:
            return b"".join([b async for b in gen])
        finally:
            await gen.aclose()

    def fds():
        return len(os.listdir("/proc/self/fd"))

    async def main():
        base = fds()
        # the default limit (100 per host): the rest queue
        got = await asyncio.gather(*(call(TransportSettings()) for _ in range(3000)))
        assert got == [b"ok"] * 3000, "a call failed"
        after = fds() - base
        open("/proc/self/status").close()  # the process can still open a file
        # a limit past the descriptors: EMFILE waits for this host's connections to come back
        wide = TransportSettings(max_connections=5000)
        got = await asyncio.gather(*(call(wide) for _ in range(3000)))
        assert got == [b"ok"] * 3000, "a call failed past the fd limit"
        wide_after = fds() - base
        open("/proc/self/status").close()
        await close_sessions()
        for _ in range(3):
            await asyncio.sleep(0)  # the closed sockets' descriptors are freed by the loop
        held = []  # a process with no descriptor left at all
        try:
            while True:
                held.append(os.dup(0))
        except OSError:
            pass
        try:
            await call(TransportSettings())
            message = "no failure"
        except LlmError as exc:
            message = exc.code + " " + exc.message
        for fd in held:
            os.close(fd)
        print(after, wide_after, message)

    asyncio.run(main())
    """
)


@pytest.mark.slow
def test_3000_concurrent_calls_under_a_1024_fd_limit_all_succeed_and_fds_stay_bounded() -> None:
    server = subprocess.Popen([sys.executable, "-c", _FD_SERVER], stdout=subprocess.PIPE, text=True)
    try:
        assert server.stdout is not None
        port = server.stdout.readline().strip()
        done = subprocess.run(
            [sys.executable, "-c", _FD_CLIENT, port], capture_output=True, text=True, timeout=300
        )
    finally:
        server.kill()
        server.wait()
    assert done.returncode == 0, done.stderr[-3000:]
    after, wide_after, message = done.stdout.strip().split(" ", 2)
    assert int(after) <= 100 + 5  # at most the 100 idle keep-alive sockets
    assert int(wide_after) < 1024 - 100  # idle sockets capped, descriptors to spare
    assert (
        message
        == f"TRANSPORT Acme API request to http://127.0.0.1:{port} failed: too many open files"
    )


async def test_a_connection_made_as_its_caller_is_cancelled_is_closed_not_leaked(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The connect runs in a task of its own; when the caller is cancelled in the very loop turn
    the connect finishes (the load test's race), the finished connection is closed, not left
    open outside the pool (the server sees it end)."""
    import modelwire.wire.pool as pool_module
    from modelwire.wire.connect import Target

    ended = asyncio.Event()

    async def until_eof(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.read()
        ended.set()

    srv, url = await _server(until_eof)
    port = int(url.rsplit(":", 1)[1])
    real = pool_module.open_connection
    made: list[object] = []
    caller: list[asyncio.Task[object]] = []

    async def connect_then_cancel_the_caller(dns: Resolver, target: Target) -> object:
        conn = await real(dns, target)
        made.append(conn)
        # runs before the connect task's completion wakes the caller: the caller is cancelled
        # with the connection already made
        asyncio.get_running_loop().call_soon(caller[0].cancel)
        return conn

    monkeypatch.setattr(pool_module, "open_connection", connect_then_cancel_the_caller)
    pool = Pool()
    target = Target(False, "127.0.0.1", port, None, None, TransportSettings())
    task: asyncio.Task[object] = asyncio.create_task(pool.acquire(target))  # type: ignore[arg-type]
    caller.append(task)
    with pytest.raises(asyncio.CancelledError):
        await task
    assert len(made) == 1
    await asyncio.wait_for(ended.wait(), 30)  # a hang guard only: the server saw the close
    pool.close()
    srv.close()
    await srv.wait_closed()
