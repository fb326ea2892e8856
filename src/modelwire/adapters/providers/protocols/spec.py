"""What one wire protocol is to the adapter: its request builder, streaming translator, body
framing, how an API key travels and how far it honours structured output (a `WireProtocol`).

Each protocol module exports one `PROTOCOL`; `registry.protocol(api)` loads it on first use, so
a process that never speaks Bedrock never imports its signer or frame decoder.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import NamedTuple

from ....errors import LlmError
from ....vocab import StructuredOutputSupport
from ....wire.pump import Framer, Translator
from ....wire.settings import DEFAULT_SETTINGS, TransportSettings
from ....wire.transport import Transport
from ..context import NContext
from ..materialize import ModelDescriptor
from .common import ResponseRecord
from .request import BuiltRequest, RequestOptions

__all__ = [
    "AsyncAuthorize",
    "AuthContext",
    "Authorize",
    "Framer",
    "HttpError",
    "WireProtocol",
    "bearer",
]


def bearer(key: str) -> dict[str, str]:
    """An API key as an ``Authorization: Bearer`` header."""
    return {"Authorization": f"Bearer {key}"}


class AuthContext(NamedTuple):
    """What a request-signing protocol needs besides the request: the route (for messages),
    the launch environment credentials are read from, the route's region (None = unset), a
    clock (epoch seconds) the signature's date comes from, and how the route reaches the
    network (its transport settings and transport: a token endpoint is called the same way)."""

    route: str
    env: Mapping[str, str]
    region: str | None
    now: Callable[[], float]
    settings: TransportSettings = DEFAULT_SETTINGS
    transport: Transport | None = None


HttpError = Callable[[LlmError, str, Mapping[str, str], tuple[str, ...]], LlmError]
"""Refines the generic error of a non-2xx reply from its body text and headers (the secrets are
for redaction); must be idempotent and keep the status and request id."""


Authorize = Callable[[BuiltRequest, Mapping[str, str], AuthContext], dict[str, str]]
"""Computes the auth headers of a finished request (final URL, headers and body), e.g. AWS
SigV4; raises `LlmError` ``MISSING_CREDENTIAL`` naming the variables it looked for."""


AsyncAuthorize = Callable[[BuiltRequest, Mapping[str, str], AuthContext], Awaitable[dict[str, str]]]
"""`Authorize` for credentials that take I/O to turn into headers (an OAuth access token minted
from a Google service-account key or refresh token)."""


class WireProtocol(NamedTuple):
    """One protocol: `build` the request, `translator` for its stream, the body `framer`,
        `key_headers` (how a plain API key is sent), `key_header_names` (profile headers that carry
        the credential instead, lower case), and `structured_output` for a model. A protocol with
    `authorize` signs each request itself when the route resolves no plain key."""

    api: str
    build: Callable[[ModelDescriptor, NContext, RequestOptions], BuiltRequest]
    translator: Callable[[ResponseRecord], Translator]
    structured_output: Callable[[ModelDescriptor], StructuredOutputSupport]
    key_headers: Callable[[str], dict[str, str]] = bearer
    key_header_names: tuple[str, ...] = ("authorization", "cf-aig-authorization")
    framer: Callable[[], Framer] | None = None
    """The body framer; None = Server-Sent Events (the pump's own decoder)."""
    authorize: Authorize | None = None
    ambient_env: tuple[str, ...] = ()
    """For a signing protocol: variables any one of which means ambient credentials exist
    (what `modelwire providers` checks before calling a route ready)."""
    http_error: HttpError | None = None
    """The protocol's own reading of an HTTP error body (e.g. Mistral's 422, Azure's content
    filter 400); None = the generic status mapping alone."""
    parallel_tool_calls: bool = True
    """Whether the protocol can express `parallel_tool_calls` (Gemini has no such switch)."""
    signed_path: bool = False
    """The request URL is sent byte for byte as built (a signature covers its encoded path)."""
    ambient_ready: Callable[[Mapping[str, str]], bool] | None = None
    """For a signing protocol: whether ambient credentials resolve from this environment (a
    credentials file counts); None = judge by `ambient_env` alone."""
    free_text_tools: bool = False
    """The protocol sends free-text tools (`ToolSchema.free_text`, OpenAI's custom tools);
    elsewhere such a tool is refused with UNSUPPORTED_OPTION before any I/O."""
    authorize_async: AsyncAuthorize | None = None
    """Like `authorize`, for credentials that need I/O first (Google OAuth tokens)."""
    reasoning: Callable[[ModelDescriptor], bool] | None = None
    """Whether the protocol can carry a reasoning effort for a reasoning model (Converse: only
    Claude's thinking); None = always. Where it cannot, the model offers no efforts."""

    @property
    def signs(self) -> bool:
        """The protocol authenticates a request itself when the route resolves no plain key."""
        return self.authorize is not None or self.authorize_async is not None
