"""OpenAI Responses over a WebSocket (`transport = "websocket"`): one connection per call, one
``response.create`` message (the Responses body minus the transport-only ``stream`` and
``background`` fields), and the server's JSON event frames read one by one — each handed to
the same translator an SSE stream feeds, through `MessageFramer`.

Failures match the HTTP path: a refused upgrade is the status's code (`failure_for_status`),
a dropped connection ``TRANSPORT``, a frame that is not text ``MALFORMED_RESPONSE``; a socket
closed before the response completed ends the reads, so the translator reports the truncated
stream exactly as it does for a body cut short. The idle watchdog and the call deadlines guard
the upgrade and every receive.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Iterable, Mapping
from typing import Final

import aiohttp
import msgspec

from ..errors import ErrorCode, LlmError
from .credentials import credential_values
from .http import get_session, transport_reason
from .sse import MAX_EVENT_BYTES, SseEvent
from .status import failure_for_status
from .watchdog import IdleWatchdog

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


_TRANSPORT_ERRORS: Final = (aiohttp.ClientError, OSError)


async def responses_websocket(
    url: str,
    body: bytes,
    headers: Mapping[str, str],
    *,
    provider: str,
    endpoint: str,
    watchdog: IdleWatchdog,
) -> AsyncGenerator[bytes, None]:
    """Open the socket at `url` (an ``https`` URL is switched to ``wss``), send the request,
    and yield each text message's bytes until the server closes or the reader stops."""
    message = create_message(body)
    sent = {k: v for k, v in headers.items() if k.lower() not in ("content-type", "accept")}
    session = get_session()
    try:
        ws = await watchdog.guard(
            session.ws_connect(
                websocket_url(url),
                headers=sent,
                max_msg_size=MAX_EVENT_BYTES,
                autoping=True,
            )
        )
    except aiohttp.WSServerHandshakeError as exc:
        raise failure_for_status(
            exc.status,
            exc.message or "",
            exc.headers or {},
            provider=provider,
            secrets=credential_values(headers),
        ) from exc
    except LlmError:
        raise
    except _TRANSPORT_ERRORS as exc:
        raise LlmError(
            f"{provider} WebSocket to {endpoint} failed: {transport_reason(exc)}",
            ErrorCode.TRANSPORT,
            cause=exc,
        ) from exc
    try:
        await watchdog.guard(ws.send_str(message.decode()))
        while True:
            try:
                msg = await watchdog.guard(ws.receive())
            except LlmError:
                raise
            except _TRANSPORT_ERRORS as exc:
                raise LlmError(
                    f"{provider} WebSocket from {endpoint} failed: {transport_reason(exc)}",
                    ErrorCode.TRANSPORT,
                    cause=exc,
                ) from exc
            if msg.type == aiohttp.WSMsgType.TEXT:
                yield msg.data.encode()
            elif msg.type == aiohttp.WSMsgType.BINARY:
                raise LlmError(
                    f"{provider} WebSocket sent a binary frame; Responses events are JSON text",
                    ErrorCode.MALFORMED_RESPONSE,
                )
            elif msg.type == aiohttp.WSMsgType.ERROR:
                reason = transport_reason(ws.exception() or ConnectionError("socket error"))
                raise LlmError(
                    f"{provider} WebSocket from {endpoint} failed: {reason}",
                    ErrorCode.TRANSPORT,
                )
            else:  # CLOSE / CLOSING / CLOSED: the response ends here, complete or not
                return
    finally:
        await ws.close()
