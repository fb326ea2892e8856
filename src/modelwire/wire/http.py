"""The shared HTTP transport: one pooled `aiohttp.ClientSession` per event loop, and a streaming
POST that maps every transport failure to `LlmError`.

`stream_post` sends one JSON body and yields the response body in reads as they arrive, each
read (and the request up to its headers) guarded by the idle watchdog. Failures never leak an
aiohttp type: before headers ``TRANSPORT`` "<provider> API request to <endpoint> failed: <reason>",
after headers ``TRANSPORT`` "<provider> API stream from <endpoint> failed: <reason>" (the reason
from `transport_reason`: refused, DNS, TLS, reset, cut off, ...), watchdog expiry ``TIMEOUT``,
a non-2xx status the `failure_for_status` error (reading at most 1 MiB of the error body), a 2xx
without a body ``EMPTY_RESPONSE``. Caller cancellation stays `asyncio.CancelledError`. The
connection is returned to the pool only after a body was read to its end; on every other path
(error, cancellation, early close of the generator) it is closed.
"""

from __future__ import annotations

import asyncio
import contextlib
import weakref
from collections.abc import AsyncGenerator, Callable, Iterable, Mapping
from typing import Final

import aiohttp
import yarl

from ..errors import ErrorCode, LlmError
from .credentials import credential_values
from .status import failure_for_status
from .watchdog import IdleWatchdog

__all__ = [
    "MAX_ERROR_BODY_BYTES",
    "close_sessions",
    "get_session",
    "stream_post",
    "transport_reason",
]

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
    _sessions[loop] = (session, _close_at_loop_shutdown(session))
    return session


def _close_at_loop_shutdown(session: aiohttp.ClientSession) -> AsyncGenerator[None, None]:
    """An async generator parked at its first `yield`: the loop's `shutdown_asyncgens()` (run by
    `asyncio.run` on exit) finalises it, which closes the pooled session, so programs that never
    call `close_sessions()` exit without an "Unclosed client session" warning."""

    async def closer() -> AsyncGenerator[None, None]:
        try:
            yield
        finally:
            if not session.closed:
                await session.close()

    gen = closer()
    step = gen.__anext__()  # registers with the loop's asyncgen hooks, then runs to the yield
    with contextlib.suppress(StopIteration):
        step.send(None)
    return gen


async def close_sessions() -> None:
    """Close the running loop's pooled session (a later `get_session` opens a fresh one)."""
    loop = asyncio.get_running_loop()
    entry = _sessions.pop(loop, None)
    if entry is not None:
        session, gen = entry
        await gen.aclose()
        if not session.closed:
            await session.close()


def transport_reason(exc: BaseException) -> str:
    """A short, library-neutral reason for a transport failure (no exception type names)."""
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


async def _read_error_body(response: aiohttp.ClientResponse, watchdog: IdleWatchdog) -> str:
    parts: list[bytes] = []
    remaining = MAX_ERROR_BODY_BYTES
    try:
        while remaining > 0:
            data = await watchdog.guard(response.content.read(remaining))
            if not data:
                break
            parts.append(data)
            remaining -= len(data)
    except (*_TRANSPORT_ERRORS, LlmError):
        pass  # a broken error body still fails by its status
    return b"".join(parts).decode("utf-8", "replace")


async def stream_post(
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
) -> AsyncGenerator[bytes, None]:
    """POST `body` (JSON bytes) to `url` and yield the 2xx response body read by read.

    `provider` is the display name and `endpoint` the base URL used in failure messages;
    `secrets`, and every credential carried by `headers` (``Authorization``, ``x-api-key``, …),
    are redacted from any provider error text. Close the generator (``aclose``) to stop
    early; the connection is then dropped, never reused half-read. `refine` is a protocol's
    own reading of an error reply (body text, headers, secrets) applied after the generic one.
    `encoded_url` sends `url` exactly as given (already percent-encoded, e.g. a signed path).
    `on_headers` hears the response headers of every status (e.g. the provider's rate limits).
    """
    session = get_session()
    try:
        target: str | yarl.URL = yarl.URL(url, encoded=True) if encoded_url else url
        response = await watchdog.guard(
            session.post(target, data=body, headers=headers, allow_redirects=False)
        )
    except LlmError:
        raise
    except _TRANSPORT_ERRORS as exc:
        raise LlmError(
            f"{provider} API request to {endpoint} failed: {transport_reason(exc)}",
            ErrorCode.TRANSPORT,
            cause=exc,
        ) from exc
    clean = False
    try:
        if on_headers is not None:
            on_headers(response.headers)
        status = response.status
        if status < 200 or status >= 300:
            text = await _read_error_body(response, watchdog)
            kept = (*secrets, *credential_values(headers))
            error = failure_for_status(
                status,
                text,
                response.headers,
                provider=provider,
                fallback_request_id_headers=fallback_request_id_headers,
                secrets=kept,
            )
            raise error if refine is None else refine(error, text, response.headers, kept)
        if status in (204, 205) or response.content_length == 0:
            clean = True
            raise LlmError(f"{provider} API returned no response body", ErrorCode.EMPTY_RESPONSE)
        content = response.content
        guard = watchdog.guard
        while True:
            try:
                data = await guard(content.readany())
            except LlmError:
                raise
            except _TRANSPORT_ERRORS as exc:
                raise LlmError(
                    f"{provider} API stream from {endpoint} failed: {transport_reason(exc)}",
                    ErrorCode.TRANSPORT,
                    cause=exc,
                ) from exc
            if not data:
                clean = True
                return
            yield data
    finally:
        if clean:
            response.release()
        else:
            response.close()
