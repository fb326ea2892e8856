"""Anthropic's Messages API on Amazon Bedrock and on Google Vertex AI (`anthropic-bedrock`,
`anthropic-vertex`): the `anthropic-messages` body and stream, another endpoint and auth.

Both send the Messages body without ``model`` (the model is in the URL) and with the cloud's
``anthropic_version`` in the body instead of the ``anthropic-version`` header:

- ``anthropic-bedrock``: ``POST {base_url}/model/{model id, percent-encoded}/
  invoke-with-response-stream`` (InvokeModelWithResponseStream), no ``stream`` field (the path
  streams), ``anthropic_version: "bedrock-2023-05-31"``, beta features in the body's
  ``anthropic_beta`` list (Bedrock reads no ``anthropic-beta`` header). The answer is the AWS
  event stream whose ``chunk`` events carry ``{"bytes": base64(one Anthropic stream event)}``;
  the Anthropic translator reads the decoded events, in-stream exceptions fail the stream as
  on ``bedrock-converse-stream``. Auth is ambient AWS (`aws_credentials.authorize`: a Bedrock
  API key, or SigV4 over the final request).
- ``anthropic-vertex``: ``POST {base_url}/{model id}:streamRawPredict`` where the base URL
  (built by the dispatch from the route's ``project`` and ``region``) ends
  ``/v1/projects/{project}/locations/{region}/publishers/anthropic/models``;
  ``anthropic_version: "vertex-2023-10-16"``, ``stream: true``; the answer is Anthropic's own
  SSE. Auth is a Google OAuth access token (`google_auth.authorize_google`), or the route's key
  as one.
"""

from __future__ import annotations

import base64
import binascii
from typing import Final
from urllib.parse import quote

import msgspec

from ....vocab import StreamChunk, StructuredOutputSupport
from ....wire.eventstream import EventStreamDecoder
from ....wire.sse import SseEvent
from ..aws_credentials import AMBIENT_ENV, authorize, aws_ambient_ready
from ..context import NContext
from ..google_auth import TOKEN_ENV, authorize_google, google_ambient_ready
from ..materialize import ModelDescriptor
from .anthropic_messages import build_anthropic_request
from .anthropic_stream import AnthropicTranslator
from .bedrock_errors import refine_bedrock_http_error
from .bedrock_stream import record_exception
from .common import ResponseRecord, malformed_event
from .google_errors import refine_google_http_error
from .request import BuiltRequest, RequestOptions, join_url
from .spec import WireProtocol

__all__ = [
    "BEDROCK",
    "BEDROCK_VERSION",
    "PROTOCOLS",
    "VERTEX",
    "VERTEX_VERSION",
    "BedrockAnthropicTranslator",
]

BEDROCK: Final = "anthropic-bedrock"
VERTEX: Final = "anthropic-vertex"
BEDROCK_VERSION: Final = "bedrock-2023-05-31"
VERTEX_VERSION: Final = "vertex-2023-10-16"


class _Chunk(msgspec.Struct, gc=False):
    bytes: str = ""


_CHUNK: Final = msgspec.json.Decoder(_Chunk).decode


def _cloud_body(
    built: BuiltRequest, version: str, *, stream: bool, beta_in_body: bool
) -> tuple[bytes, dict[str, str]]:
    """The Messages body without ``model`` (nor ``stream`` unless `stream`), with the cloud's
    ``anthropic_version`` (and the beta features as ``anthropic_beta``), and the headers left."""
    body: dict[str, object] = msgspec.json.decode(built.body)
    body.pop("model", None)
    if not stream:
        body.pop("stream", None)
    headers = {k: v for k, v in built.headers.items() if k.lower() != "anthropic-version"}
    if beta_in_body:
        beta = headers.pop("anthropic-beta", None)
        if beta:
            body["anthropic_beta"] = beta.split(",")
    body["anthropic_version"] = version
    return msgspec.json.encode(body), headers


def build_bedrock_anthropic_request(
    model: ModelDescriptor, ctx: NContext, options: RequestOptions
) -> BuiltRequest:
    """The InvokeModelWithResponseStream request (unsigned: `aws_credentials.authorize` signs
    the final request, or sends the Bedrock API key)."""
    built = build_anthropic_request(model, ctx, options)
    body, headers = _cloud_body(built, BEDROCK_VERSION, stream=False, beta_in_body=True)
    headers["Accept"] = "application/vnd.amazon.eventstream"
    path = f"/model/{quote(model.id, safe='')}/invoke-with-response-stream"
    return BuiltRequest(url=join_url(model.base_url, path), headers=headers, body=body)


def build_vertex_anthropic_request(
    model: ModelDescriptor, ctx: NContext, options: RequestOptions
) -> BuiltRequest:
    """The streamRawPredict request (no credentials: the access token is added after)."""
    built = build_anthropic_request(model, ctx, options)
    body, headers = _cloud_body(built, VERTEX_VERSION, stream=True, beta_in_body=False)
    headers["Accept"] = "text/event-stream"
    path = f"/{quote(model.id, safe='@._-')}:streamRawPredict"
    return BuiltRequest(url=join_url(model.base_url, path), headers=headers, body=body)


class BedrockAnthropicTranslator:
    """Unwraps each event-stream ``chunk`` (base64 JSON) into the Anthropic translator; an
    in-stream exception fails the stream; another event type is reported, never an error."""

    __slots__ = ("_inner", "_record")

    def __init__(self, record: ResponseRecord) -> None:
        self._record = record
        self._inner = AnthropicTranslator(record)

    @property
    def done(self) -> bool:
        """The response is complete (``message_stop``, or an exception): stop reading."""
        return self._inner.done

    def feed(self, event: SseEvent, out: list[StreamChunk]) -> None:
        """Translate one event-stream message, appending its chunks to `out`."""
        kind = event.event or ""
        if kind == "chunk":
            try:
                data = base64.b64decode(_CHUNK(event.data).bytes, validate=True).decode()
            except (msgspec.DecodeError, binascii.Error, UnicodeDecodeError) as exc:
                raise malformed_event(self._record, "Bedrock InvokeModel", exc) from exc
            self._inner.feed(SseEvent(None, data), out)
        elif kind.startswith(("exception:", "error:")):
            record_exception(self._record, kind, event.data)
            self._inner.done = True
        else:
            self._record.note_unknown(f"event:{kind or '(untyped)'}")

    def end(self, out: list[StreamChunk]) -> None:
        """The stream ended: the Anthropic translator's closing chunks."""
        self._inner.end(out)


def _emulated(model: ModelDescriptor) -> StructuredOutputSupport:
    return "emulated"  # a forced answer tool, as on anthropic-messages


PROTOCOLS: Final = {
    BEDROCK: WireProtocol(
        BEDROCK,
        build_bedrock_anthropic_request,
        BedrockAnthropicTranslator,
        _emulated,
        framer=EventStreamDecoder,
        authorize=authorize,
        ambient_env=AMBIENT_ENV,
        http_error=refine_bedrock_http_error,
        signed_path=True,
        ambient_ready=aws_ambient_ready,
    ),
    VERTEX: WireProtocol(
        VERTEX,
        build_vertex_anthropic_request,
        AnthropicTranslator,
        _emulated,
        authorize_async=authorize_google,
        ambient_env=(TOKEN_ENV, "GOOGLE_APPLICATION_CREDENTIALS"),
        ambient_ready=google_ambient_ready,
        http_error=refine_google_http_error,  # Vertex answers errors in Google's envelope
    ),
}
"""The two cloud-hosted Anthropic protocols (registered lazily by `registry.protocol`)."""
