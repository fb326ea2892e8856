"""OpenAI Responses over a WebSocket (`transport = "websocket"`): one connection per call, one
``response.create`` message (the Responses body minus the transport-only ``stream`` and
``background`` fields), and the server's JSON event frames read one by one — each handed to
the same translator an SSE stream feeds, through `MessageFramer`.

Failures match the HTTP path: a refused upgrade is the status's code (`failure_for_status`),
a dropped connection ``TRANSPORT``, a frame that is not text ``MALFORMED_RESPONSE``, and so is a
message over `MAX_EVENT_BYTES` (the SSE event cap; a size failure naming the limit, refused from
its frame header before it is buffered, and not retried by default); a socket
closed before the response completed ends the reads, so the translator reports the truncated
stream exactly as it does for a body cut short. The idle watchdog and the call deadlines guard
the upgrade and every receive. The call returns as soon as the translator has the completed
response: the socket is closed without waiting for the server's close handshake.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Iterable, Mapping
from typing import Final

import msgspec

from ..errors import ErrorCode, LlmError
from .credentials import credential_values
from .h1transport import default_transport
from .http import bounded_error_text, transport_failure
from .proxy import proxy_secrets
from .settings import DEFAULT_SETTINGS, TransportSettings
from .sse import MAX_EVENT_BYTES, SseEvent
from .status import failure_for_status
from .transport import Request, Transport
from .watchdog import IdleWatchdog
from .wsclient import MessageTooLarge, UpgradeRefused

__all__ = ["MessageFramer", "responses_websocket", "websocket_url"]

_TRANSPORT_ONLY: Final = ("stream", "background")
_CREATE_PREFIX: Final = b'{"type":"response.create",'


def websocket_url(url: str) -> str:
    """`url` with its scheme switched to the WebSocket one (``https`` → ``wss``)."""
    if url.startswith("https://"):
        return "wss://" + url[len("https://") :]
    if url.startswith("http://"):
        return "ws://" + url[len("http://") :]
    return url


def create_message(body: bytes) -> bytes:
    """The ``response.create`` message for a Responses request body."""
    fields = msgspec.json.decode(body)
    if not isinstance(fields, dict):
        raise LlmError("a Responses request body must be a JSON object", ErrorCode.INVALID_REQUEST)
    for key in _TRANSPORT_ONLY:
        fields.pop(key, None)
    rest = msgspec.json.encode(fields)
    return _CREATE_PREFIX + rest[1:] if len(rest) > 2 else b'{"type":"response.create"}'


class MessageFramer:
    """Each read is one whole WebSocket message: one unnamed event carrying its text."""

    __slots__ = ()

    def feed(self, data: bytes) -> Iterable[SseEvent]:
        """The one event `data` is."""
        return (SseEvent(None, data.decode("utf-8", "replace")),)

    def close(self) -> Iterable[SseEvent]:
        """Nothing is ever pending between messages."""
        return ()


async def responses_websocket(
    url: str,
    body: bytes,
    headers: Mapping[str, str],
    *,
    provider: str,
    endpoint: str,
    watchdog: IdleWatchdog,
    settings: TransportSettings = DEFAULT_SETTINGS,
    transport: Transport | None = None,
) -> AsyncGenerator[bytes, None]:
    """Open the socket at `url` (an ``https`` URL is switched to ``wss``) through the route's
    transport, send the request, and yield each text message's bytes until the server closes
    or the reader stops."""
    message = create_message(body)
    sent = {k: v for k, v in headers.items() if k.lower() not in ("content-type", "accept")}
    kept = (*credential_values(headers), *proxy_secrets(settings.proxy))
    request = Request("GET", url, headers=sent, settings=settings, guard=watchdog.guard)
    try:
        ws = await watchdog.guard(
            (transport or default_transport()).websocket(request, max_message_bytes=MAX_EVENT_BYTES)
        )
    except UpgradeRefused as exc:
        raise failure_for_status(
            exc.status, bounded_error_text(exc.body), exc.headers, provider=provider, secrets=kept
        ) from exc
    except LlmError:
        raise
    except OSError as exc:
        raise transport_failure(f"{provider} WebSocket to {endpoint} failed", exc, kept) from exc
    try:
        await watchdog.guard(ws.send_text(message.decode()))
        while True:
            try:
                data = await watchdog.guard(ws.receive())
            except LlmError:
                raise
            except MessageTooLarge as exc:
                raise LlmError(  # a size failure, not a network one: never retried
                    f"{provider} WebSocket from {endpoint} sent a message larger than the "
                    f"{MAX_EVENT_BYTES}-byte limit",
                    ErrorCode.MALFORMED_RESPONSE,
                    cause=exc,
                ) from exc
            except TypeError as exc:
                raise LlmError(
                    f"{provider} WebSocket sent a binary frame; Responses events are JSON text",
                    ErrorCode.MALFORMED_RESPONSE,
                ) from exc
            except OSError as exc:
                raise transport_failure(
                    f"{provider} WebSocket from {endpoint} failed", exc
                ) from exc
            if data is None:  # closed: the response ends here, complete or not
                return
            yield data
    finally:
        await ws.aclose()
