"""The shared HTTP transport: the streaming POST every HTTP adapter uses, over this package's own
HTTP/1.1 connections (`wire.h1`, pooled per event loop by `wire.pool`), and one pooled
`aiohttp.ClientSession` per event loop for everything else (model discovery, WebSockets).

`stream_post` sends one JSON body and yields the response body in reads as they arrive, each
read (and the request up to its headers) guarded by the idle watchdog. Failures never leak a
library type: before headers ``TRANSPORT`` "<provider> API request to <endpoint> failed:
<reason>", after headers ``TRANSPORT`` "<provider> API stream from <endpoint> failed: <reason>"
(the reason from `transport_reason`: refused, DNS, TLS, reset, cut off, ...), watchdog expiry
``TIMEOUT``, a non-2xx status the `failure_for_status` error (reading at most 1 MiB of the error
body), a 2xx without a body ``EMPTY_RESPONSE``. Caller cancellation stays
`asyncio.CancelledError`. The connection is returned to the pool only after a body was read to
its end; on every other path (error, cancellation, early close of the generator before the rest
of the body arrived) it is closed. Redirects are never followed; no proxy, cookie or
compression is asked for (a gzip or deflate body a server sends anyway is inflated).
"""

from __future__ import annotations

import asyncio
import contextlib
import weakref
from collections.abc import AsyncGenerator, Awaitable, Callable, Iterable, Mapping
from typing import Final, ParamSpec

import aiohttp
import yarl

from ..errors import ErrorCode, LlmError
from .credentials import credential_values
from .h1 import Connection, Head, WireError, parse_head, request_bytes
from .h1body import Body, body_for
from .pool import Key, Pool, close_pool, get_pool, new_pool
from .status import failure_for_status
from .watchdog import IdleWatchdog

__all__ = [
    "MAX_ERROR_BODY_BYTES",
    "close_sessions",
    "get_session",
    "stream_post",
    "stream_post_pieces",
    "transport_reason",
]

P = ParamSpec("P")

MAX_ERROR_BODY_BYTES: Final = 1 << 20
"""At most this many bytes of a non-2xx body are read (1 MiB)."""

_sessions: weakref.WeakKeyDictionary[
    asyncio.AbstractEventLoop, tuple[aiohttp.ClientSession, AsyncGenerator[None, None]]
] = weakref.WeakKeyDictionary()
_TRANSPORT_ERRORS: Final = (aiohttp.ClientError, OSError, ValueError, RuntimeError)


def get_session() -> aiohttp.ClientSession:
    """The pooled client session of the running event loop, created on first use.

    No overall or read timeout is set (the idle watchdog owns stalls); environment proxies are not
    consulted, no cookies are kept between requests, and redirects are not followed (a 3xx is a
    failure: re-sending a POST body elsewhere is never silent).
    """
    loop = asyncio.get_running_loop()
    entry = _sessions.get(loop)
    if entry is not None and not entry[0].closed:
        return entry[0]
    session = aiohttp.ClientSession(
        connector=aiohttp.TCPConnector(limit=0, ttl_dns_cache=300),
        timeout=aiohttp.ClientTimeout(total=None, sock_read=None, sock_connect=None),
        cookie_jar=aiohttp.DummyCookieJar(),
        auto_decompress=True,
    )
    _sessions[loop] = (session, _close_at_loop_shutdown(lambda: _drop_session(loop, session)))
    return session


def _close_at_loop_shutdown(
    close: Callable[[], Awaitable[None] | None],
) -> AsyncGenerator[None, None]:
    """An async generator parked at its first `yield`: the loop's `shutdown_asyncgens()` (run by
    `asyncio.run` on exit) finalises it, which runs `close` (the pooled session's, the
    connection pool's), so programs that never call `close_sessions()` exit without an
    "Unclosed client session" or unclosed-transport warning. `close` also drops the loop's table
    entry: the generator refers to its loop, so a kept entry would keep the loop alive."""

    async def closer() -> AsyncGenerator[None, None]:
        try:
            yield
        finally:
            done = close()
            if done is not None:
                await done

    gen = closer()
    step = gen.__anext__()  # registers with the loop's asyncgen hooks, then runs to the yield
    with contextlib.suppress(StopIteration):
        step.send(None)
    return gen


async def _close_session(session: aiohttp.ClientSession) -> None:
    if not session.closed:
        await session.close()


async def _drop_session(loop: asyncio.AbstractEventLoop, session: aiohttp.ClientSession) -> None:
    """At loop shutdown: forget the loop's entry (its closer refers to the loop, so the entry
    would otherwise keep a finished loop alive) and close the session."""
    entry = _sessions.get(loop)
    if entry is not None and entry[0] is session:
        del _sessions[loop]
    await _close_session(session)


async def close_sessions() -> None:
    """Close the running loop's pooled aiohttp session and its pool of streaming connections (a
    later request opens fresh ones)."""
    loop = asyncio.get_running_loop()
    pool = get_pool(loop)
    if pool is not None:
        close_pool(loop)
        if pool.closer is not None:
            await pool.closer.aclose()
    entry = _sessions.pop(loop, None)
    if entry is not None:
        session, gen = entry
        await gen.aclose()
        await _close_session(session)


def transport_reason(exc: BaseException) -> str:
    """A short, library-neutral reason for a transport failure (no exception type names)."""
    if isinstance(exc, WireError):
        return exc.reason
    if isinstance(exc, aiohttp.ClientConnectorDNSError):
        return "could not resolve the host"
    if isinstance(exc, (aiohttp.ClientConnectorCertificateError, aiohttp.ClientSSLError)):
        return "TLS handshake failed"
    if isinstance(exc, aiohttp.ClientConnectorError):
        if isinstance(exc.os_error, ConnectionRefusedError):
            return "connection refused"
        return "could not connect"
    if isinstance(exc, aiohttp.ServerDisconnectedError):
        return "the server closed the connection"
    if isinstance(exc, aiohttp.ClientPayloadError):
        return "the response body was cut off"
    if isinstance(exc, ConnectionResetError):
        return "the connection was reset"
    if isinstance(exc, aiohttp.InvalidURL):
        return "the URL is not valid"
    if isinstance(exc, OSError):
        return "network error"
    return "connection failed"


def _route(url: str, encoded: bool) -> tuple[Key, str, str]:
    """`(pool key, request target, Host header)` of an ``http``/``https`` URL."""
    try:
        parsed = yarl.URL(url, encoded=encoded)
        host, port = parsed.raw_host, parsed.port
        scheme = parsed.scheme
    except (ValueError, TypeError) as exc:
        raise WireError("the URL is not valid") from exc
    if scheme not in ("http", "https") or not host or port is None:
        raise WireError("the URL is not valid")
    target = parsed.raw_path_qs or "/"
    return (scheme == "https", host, port), target, parsed.host_port_subcomponent or host


def _pool() -> Pool:
    loop = asyncio.get_running_loop()
    pool = get_pool(loop)
    if pool is None:
        pool = new_pool(loop)
        pool.closer = _close_at_loop_shutdown(lambda: close_pool(loop))
    return pool


async def _exchange(pool: Pool, key: Key, request: list[bytes]) -> tuple[Connection, Head]:
    """Send the request (handed over as `[bytes]`, emptied once sent, so that no frame holds the
    request while the head is awaited) on a pooled connection and read the response head."""
    conn = await pool.acquire(key)
    try:
        conn.write(request.pop())
        data = b""
        while True:
            more = conn.take()
            if more:
                data = data + more if data else more
                head = parse_head(data)
                if head is not None:
                    return conn, head
            elif conn.closed:
                raise WireError("the server closed the connection")
            else:
                await conn.wait()
    except BaseException:
        pool.drop(conn)
        raise


async def _read_error_body(conn: Connection, head: Head, watchdog: IdleWatchdog) -> str:
    parts: list[bytes] = []
    remaining = MAX_ERROR_BODY_BYTES
    try:
        reader = body_for(head)
        data = head.rest
        while remaining > 0 and not reader.done:
            if data:
                part = reader.feed(data)[:remaining]
                parts.append(part)
                remaining -= len(part)
            elif conn.closed:
                break
            else:
                await watchdog.guard(conn.wait())
            data = conn.take()
    except (*_TRANSPORT_ERRORS, LlmError):
        pass  # a broken error body still fails by its status
    return b"".join(parts).decode("utf-8", "replace")


async def stream_post_pieces(
    url: str,
    body: bytes,
    headers: Mapping[str, str],
    *,
    provider: str,
    endpoint: str,
    watchdog: IdleWatchdog,
    fallback_request_id_headers: Iterable[str] = (),
    secrets: Iterable[str] = (),
    refine: Callable[[LlmError, str, Mapping[str, str], tuple[str, ...]], LlmError] | None = None,
    encoded_url: bool = False,
    on_headers: Callable[[Mapping[str, str]], None] | None = None,
) -> AsyncGenerator[list[bytes], None]:
    """POST `body` (JSON bytes) to `url` and yield the 2xx response body read by read, each read
    as the body's pieces in order (one per HTTP chunk of a chunked body; `stream_post` joins them).

    `provider` is the display name and `endpoint` the base URL used in failure messages;
    `secrets`, and every credential carried by `headers` (``Authorization``, ``x-api-key``, …),
    are redacted from any provider error text. Close the generator (``aclose``) to stop
    early; the connection is then dropped, never reused half-read (unless the rest of the body
    had already arrived whole). `refine` is a protocol's own reading of an error reply (body
    text, headers, secrets) applied after the generic one. `encoded_url` sends `url` exactly as
    given (already percent-encoded, e.g. a signed path). `on_headers` hears the response headers
    of every status (e.g. the provider's rate limits).
    """
    pool = _pool()
    try:
        key, target, host = _route(url, encoded_url)
        request = [request_bytes("POST", target, host, dict(headers), body)]
        del body  # a long prompt is not held for the whole stream (nor its request bytes)
        kept = (*secrets, *credential_values(headers))  # what an error text must not show
        del headers, secrets  # only `kept` is needed from here on
        conn, head = await watchdog.guard(_exchange(pool, key, request))
    except LlmError:
        raise
    except _TRANSPORT_ERRORS as exc:
        raise LlmError(
            f"{provider} API request to {endpoint} failed: {transport_reason(exc)}",
            ErrorCode.TRANSPORT,
            cause=exc,
        ) from exc
    reader: Body | None = None
    clean = keep_alive = False
    try:
        if on_headers is not None:
            on_headers(head.headers)
        status = head.status
        if status < 200 or status >= 300:
            text = await _read_error_body(conn, head, watchdog)
            error = failure_for_status(
                status,
                text,
                head.headers,
                provider=provider,
                fallback_request_id_headers=fallback_request_id_headers,
                secrets=kept,
            )
            raise error if refine is None else refine(error, text, head.headers, kept)
        try:
            reader = body_for(head)
        except WireError as exc:
            raise _stream_failure(provider, endpoint, exc) from exc
        if status in (204, 205) or reader.done:
            clean = reader.done
            raise LlmError(f"{provider} API returned no response body", ErrorCode.EMPTY_RESPONSE)
        feed, take, wait, guard = reader.pieces, conn.take, conn.wait, watchdog.guard
        data, keep_alive = head.rest, head.keep_alive
        del head  # its headers are not held for the rest of the stream
        while not reader.done:
            if not data:
                if conn.closed:
                    if reader.until_eof:
                        break
                    raise _stream_failure(
                        provider, endpoint, WireError("the response body was cut off")
                    )
                try:
                    await guard(wait())
                except LlmError:
                    raise
                except _TRANSPORT_ERRORS as exc:
                    raise _stream_failure(provider, endpoint, exc) from exc
                data = take()
                continue
            try:
                out = feed(data)
            except WireError as exc:
                raise _stream_failure(provider, endpoint, exc) from exc
            data = b""  # this read is not held while the consumer works, nor during the next wait
            if out:
                yield out
                del out
            if reader.error is not None:
                raise _stream_failure(provider, endpoint, reader.error)
            if not reader.done:
                data = take()
        clean = True
    finally:
        if not clean and reader is not None and reader.error is None and not conn.closed:
            clean = _drained(reader, conn)  # closed early: the rest may already be here whole
        if clean and keep_alive and not conn.closed and not _leftover(reader):
            pool.release(key, conn)
        else:
            pool.drop(conn)


def _joined(
    pieces: Callable[P, AsyncGenerator[list[bytes], None]],
) -> Callable[P, AsyncGenerator[bytes, None]]:
    async def joined(*args: P.args, **kwargs: P.kwargs) -> AsyncGenerator[bytes, None]:
        reads = pieces(*args, **kwargs)
        try:
            async for read in reads:
                yield read[0] if len(read) == 1 else b"".join(read)
        finally:
            await reads.aclose()

    joined.__name__ = joined.__qualname__ = "stream_post"
    joined.__doc__ = """`stream_post_pieces` with each read's pieces joined: the 2xx response body
    of one POST, read by read, as bytes."""
    return joined


stream_post = _joined(stream_post_pieces)


def _leftover(reader: Body | None) -> bool:
    """True when bytes followed the body, or the body ends only with the connection."""
    return reader is None or reader.until_eof or bool(reader.extra)


def _drained(reader: Body, conn: Connection) -> bool:
    """Feed what is already buffered (no wait): True if that completes the body."""
    try:
        data = b"" if reader.done else conn.take()
        if data:
            reader.feed(data)
    except WireError:
        return False
    return reader.done and reader.error is None


def _stream_failure(provider: str, endpoint: str, exc: BaseException) -> LlmError:
    return LlmError(
        f"{provider} API stream from {endpoint} failed: {transport_reason(exc)}",
        ErrorCode.TRANSPORT,
        cause=exc,
    )
