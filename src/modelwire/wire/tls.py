"""Client TLS contexts per route, and the words for a TLS failure.

`client_context(settings)` builds an `ssl.SSLContext` from the route's `ca_file` (else the
default trust store, where `SSL_CERT_FILE` / `SSL_CERT_DIR` are read as the context is made, not
once per process), its `client_cert` / `client_key` (mutual TLS), offering ALPN ``http/1.1``.
Contexts are cached by what they were made from (those settings and the two variables' values),
so a route's connections share one and a changed environment gets a fresh one.

`tls_reason(exc)` is the failure's own reason ("TLS handshake failed: certificate verify failed:
unable to get local issuer certificate"), never hidden in a cause chain.
"""

from __future__ import annotations

import os
import ssl
from typing import Final

from .settings import TransportSettings

__all__ = ["client_context", "tls_reason"]

_MAX_CONTEXTS: Final = 64
_contexts: dict[tuple[str | None, ...], ssl.SSLContext] = {}


def client_context(settings: TransportSettings) -> ssl.SSLContext:
    """The TLS context of a route with these settings (made once per distinct input)."""
    key = (
        settings.ca_file,
        settings.client_cert,
        settings.client_key,
        os.environ.get("SSL_CERT_FILE"),
        os.environ.get("SSL_CERT_DIR"),
    )
    context = _contexts.get(key)
    if context is None:
        context = ssl.create_default_context(cafile=settings.ca_file)
        if settings.client_cert is not None:
            context.load_cert_chain(settings.client_cert, settings.client_key)
        context.set_alpn_protocols(["http/1.1"])
        if len(_contexts) >= _MAX_CONTEXTS:
            _contexts.clear()
        _contexts[key] = context
    return context


def tls_reason(exc: BaseException) -> str:
    """The reason of a TLS failure, in OpenSSL's words where it gave some."""
    if isinstance(exc, ssl.SSLCertVerificationError):
        detail = exc.verify_message or exc.reason or "certificate verify failed"
        return f"TLS handshake failed: certificate verify failed: {detail}"
    if isinstance(exc, ssl.CertificateError):
        return f"TLS handshake failed: {exc}"
    if isinstance(exc, ssl.SSLError):
        reason = exc.reason or exc.strerror or ""
        text = reason.lower().replace("_", " ") if reason else ""
        return f"TLS handshake failed: {text}" if text else "TLS handshake failed"
    return "TLS handshake failed"
