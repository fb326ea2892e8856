"""The streaming POST every HTTP adapter uses, over the library's one `Transport` (`wire.transport`;
the default is this package's HTTP/1.1 client, pooled per event loop by `wire.pool`).

`stream_post` sends one JSON body and yields the response body in reads as they arrive, each
read (and the request up to its headers) guarded by the idle watchdog. Failures never leak a
library type: before headers "<provider> API request to <endpoint> failed: <reason>", after
headers "<provider> API stream from <endpoint> failed: <reason>", as ``TRANSPORT`` (refused,
DNS, TLS with its reason, reset, cut off, a malformed response, ...), ``PROXY`` (the proxy
refused, failed or asked for credentials; named without its password) or ``TIMEOUT`` (the
connect did not finish within the route's ``connect_timeout_ms``: "connect timed out after
…ms"); watchdog expiry ``TIMEOUT``, a non-2xx status the `failure_for_status` error (reading at
most 1 MiB of the error body), a 2xx without a body ``EMPTY_RESPONSE``. Caller cancellation stays
`asyncio.CancelledError`. The connection is returned to the pool only after a body was read to
its end; on every other path (error, cancellation, early close of the generator before the rest
of the body arrived) it is closed. Redirects are never followed (the 3xx error names its
``Location``); no cookie is kept; ``Accept-Encoding: gzip, deflate`` is sent and the body
inflated.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, Callable, Iterable, Mapping
from typing import Final, ParamSpec

from ..errors import ErrorCode, LlmError
from ..vocab.json import MAX_JSON_DEPTH, json_nesting_exceeds
from .credentials import credential_values
from .h1 import WireError
from .h1transport import default_transport
from .pool import ConnectTimeout, close_pool, get_pool
from .proxy import ProxyError, proxy_secrets
from .settings import DEFAULT_SETTINGS, TransportSettings
from .status import failure_for_status
from .transport import Request, Response, Transport
from .watchdog import IdleWatchdog

__all__ = [
    "MAX_ERROR_BODY_BYTES",
    "bounded_error_text",
    "close_sessions",
    "stream_post",
    "stream_post_pieces",
    "transport_failure",
    "transport_reason",
]

P = ParamSpec("P")

MAX_ERROR_BODY_BYTES: Final = 1 << 20
"""At most this many bytes of a non-2xx body are read (1 MiB)."""

_TRANSPORT_ERRORS: Final = (OSError, ValueError, RuntimeError)


async def close_sessions() -> None:
    """Close the running loop's pool of connections (a later request opens fresh ones)."""
    loop = asyncio.get_running_loop()
    pool = get_pool(loop)
    if pool is not None:
        close_pool(loop)
        if pool.closer is not None:
            await pool.closer.aclose()


def transport_reason(exc: BaseException) -> str:
    """A short, library-neutral reason for a transport failure (no exception type names)."""
    if isinstance(exc, WireError):
        return exc.reason
    if isinstance(exc, ConnectionResetError):
        return "the connection was reset"
    if isinstance(exc, OSError):
        return "network error"
    return "connection failed"


def transport_failure(what: str, exc: BaseException, secrets: Iterable[str] = ()) -> LlmError:
    """The `LlmError` of a transport failure: `what` ("DeepSeek API request to <endpoint>
    failed") and the reason, coded ``PROXY``, ``TIMEOUT`` (connect) or ``TRANSPORT``; any of
    `secrets` in the reason is redacted."""
    reason = transport_reason(exc)
    for secret in secrets:
        if secret:
            reason = reason.replace(secret, "***")
    if isinstance(exc, ProxyError):
        code = ErrorCode.PROXY
    elif isinstance(exc, ConnectTimeout):
        code = ErrorCode.TIMEOUT
    else:
        code = ErrorCode.TRANSPORT
    return LlmError(f"{what}: {reason}", code, cause=exc)


async def _error_text(response: Response) -> str:
    """At most `MAX_ERROR_BODY_BYTES` of an error body as text (a broken one is cut short)."""
    parts: list[bytes] = []
    remaining = MAX_ERROR_BODY_BYTES
    reads = response.pieces()
    try:
        async for pieces in reads:
            for piece in pieces:
                parts.append(piece[:remaining])
                remaining -= len(parts[-1])
            if remaining <= 0:
                break
    except (*_TRANSPORT_ERRORS, LlmError):
        pass  # a broken error body still fails by its status
    finally:
        await reads.aclose()
    return bounded_error_text(b"".join(parts).decode("utf-8", "replace"))


def bounded_error_text(text: str) -> str:
    """`text`, or a note in its place when it nests JSON past `MAX_JSON_DEPTH` (the error readers
    decode it recursively; such a body carries nothing to read, and its status still classifies
    the failure)."""
    if json_nesting_exceeds(text.encode(), MAX_JSON_DEPTH):
        return f"(an error body nesting JSON deeper than {MAX_JSON_DEPTH} levels, not read)"
    return text


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
    settings: TransportSettings = DEFAULT_SETTINGS,
    transport: Transport | None = None,
) -> AsyncGenerator[list[bytes], None]:
    """POST `body` (JSON bytes) to `url` and yield the 2xx response body read by read, each read
    as the body's pieces in order (one per HTTP chunk of a chunked body; `stream_post` joins them).

    `provider` is the display name and `endpoint` the base URL used in failure messages;
    `secrets`, every credential carried by `headers` (``Authorization``, ``x-api-key``, …) and
    the proxy's password are redacted from any error text. Close the generator (``aclose``) to
    stop early; the connection is then dropped, never reused half-read (unless the rest of the
    body had already arrived whole). `refine` is a protocol's own reading of an error reply
    (body text, headers, secrets) applied after the generic one. `encoded_url` sends `url`
    exactly as given (already percent-encoded, e.g. a signed path). `on_headers` hears the
    response headers of every status (e.g. the provider's rate limits). `settings` are the
    route's transport settings; `transport` replaces the default one.
    """
    request = Request(
        "POST",
        url,
        headers=headers,
        body=body,
        settings=settings,
        guard=watchdog.guard,
        encoded_url=encoded_url,
    )
    del body  # a long prompt is not held for the whole stream (nor its request bytes)
    kept = (*secrets, *credential_values(headers), *proxy_secrets(settings.proxy))
    del headers, secrets  # only `kept` is needed from here on
    try:
        response = await watchdog.guard((transport or default_transport()).send(request))
    except LlmError:
        raise
    except _TRANSPORT_ERRORS as exc:
        raise transport_failure(f"{provider} API request to {endpoint} failed", exc, kept) from exc
    del request
    reads: AsyncGenerator[list[bytes], None] | None = None
    try:
        if on_headers is not None:
            on_headers(response.headers)
        status = response.status
        if status < 200 or status >= 300:
            text = await _error_text(response)
            error = failure_for_status(
                status,
                text,
                response.headers,
                provider=provider,
                fallback_request_id_headers=fallback_request_id_headers,
                secrets=kept,
            )
            raise error if refine is None else refine(error, text, response.headers, kept)
        length = response.headers.get("Content-Length")
        if status in (204, 205) or (length is not None and length.strip() == "0"):
            raise LlmError(f"{provider} API returned no response body", ErrorCode.EMPTY_RESPONSE)
        reads = response.pieces()
        try:
            async for out in reads:
                yield out
                del out
        except _TRANSPORT_ERRORS as exc:
            raise transport_failure(f"{provider} API stream from {endpoint} failed", exc) from exc
    finally:
        if reads is not None:
            await reads.aclose()
        await response.aclose()


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
