"""What every HTTP adapter shares: the transport (one `Transport` seam for every outgoing request,
and the route's `TransportSettings`), sessions, SSE framing, attribution, credentials, status
mapping."""

from .h1transport import H1Transport, fetch
from .settings import TransportSettings
from .transport import Reply, Request, Response, Transport, WebSocket

__all__ = [
    "H1Transport",
    "Reply",
    "Request",
    "Response",
    "Transport",
    "TransportSettings",
    "WebSocket",
    "fetch",
]
