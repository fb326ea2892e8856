"""AWS Signature Version 4 (header-based), as a pure function of one finished request.

`sign` returns the headers to add (``Authorization``, ``X-Amz-Date``, ``X-Amz-Content-Sha256``,
``X-Amz-Security-Token`` with temporary credentials); it never sends anything and reads no clock
or environment (the caller passes `now` and the credentials).

Canonical request, per the AWS rules:

- **URI**: the request path exactly as it goes on the wire (already percent-encoded), with dot
  segments and empty segments removed, then URI-encoded once more (every byte but
  ``A-Za-z0-9-._~`` and ``/``). Every service but S3 signs this double-encoded form: a Bedrock
  model id ``us.amazon.nova-micro-v1:0`` travels as ``...nova-micro-v1%3A0`` and is signed as
  ``...nova-micro-v1%253A0``. The HTTP client must therefore send the URL byte for byte as
  signed (with aiohttp: ``yarl.URL(url, encoded=True)``; a requoting client that turns ``%3A``
  back into ``:`` breaks the signature).
- **query**: every ``name=value`` pair decoded, then re-encoded (unreserved characters kept),
  sorted by name then value; a pair without ``=`` has an empty value.
- **headers**: names lower-cased, values trimmed with inner runs of whitespace collapsed to one space, sorted;
  the same name twice is joined with ``,``. ``host`` is taken from the URL when not given
  (with the port only when it is not the scheme's default, as HTTP clients send it).
- **payload**: the hex SHA-256 of the body.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Final
from urllib.parse import quote, unquote, urlsplit

__all__ = ["ALGORITHM", "canonical_query", "canonical_request", "canonical_uri", "sign"]

ALGORITHM: Final = "AWS4-HMAC-SHA256"
_DEFAULT_PORTS: Final = {"http": 80, "https": 443}
_UNSIGNED: Final = frozenset({"authorization", "user-agent", "expect", "x-amzn-trace-id"})
"""Headers never signed: the signature itself, and ones proxies rewrite in transit."""


def _remove_dot_segments(path: str) -> str:
    kept: list[str] = []
    for segment in path.split("/"):
        if segment in ("", "."):
            continue
        if segment == "..":
            if kept:
                kept.pop()
            continue
        kept.append(segment)
    normalized = "/" + "/".join(kept)
    if path.endswith("/") and normalized != "/":
        normalized += "/"
    return normalized


def canonical_uri(path: str, *, double_encode: bool = True) -> str:
    """The canonical URI of a wire `path` (normalized and encoded again unless `double_encode`
    is False, which is S3's rule)."""
    if not path:
        return "/"
    if not double_encode:
        return path
    return quote(_remove_dot_segments(path), safe="/~")


def canonical_query(query: str) -> str:
    """The canonical query string of a raw (wire) query."""
    if not query:
        return ""
    pairs: list[tuple[str, str]] = []
    for part in query.split("&"):
        if not part:
            continue
        name, _, value = part.partition("=")
        pairs.append(
            (quote(unquote(name), safe="-_.~"), quote(unquote(value), safe="-_.~")),
        )
    pairs.sort()
    return "&".join(f"{name}={value}" for name, value in pairs)


def _host(scheme: str, netloc: str) -> str:
    host = netloc.rpartition("@")[2]
    name, sep, port = host.rpartition(":")
    if sep and "]" not in port and port.isdigit() and int(port) == _DEFAULT_PORTS.get(scheme):
        return name
    return host


def _canonical_headers(headers: Mapping[str, str]) -> dict[str, str]:
    merged: dict[str, list[str]] = {}
    for name, value in headers.items():
        key = name.strip().lower()
        if key in _UNSIGNED:
            continue
        merged.setdefault(key, []).append(" ".join(value.split()))
    return {name: ",".join(merged[name]) for name in sorted(merged)}


def canonical_request(
    method: str,
    url: str,
    headers: Mapping[str, str],
    payload_hash: str,
    *,
    double_encode: bool = True,
) -> tuple[str, str]:
    """The canonical request of a finished request and its signed-header list."""
    parts = urlsplit(url)
    given = dict(headers)
    if not any(name.lower() == "host" for name in given):
        given["host"] = _host(parts.scheme.lower(), parts.netloc)
    canonical = _canonical_headers(given)
    signed = ";".join(canonical)
    lines = [
        method.upper(),
        canonical_uri(parts.path, double_encode=double_encode),
        canonical_query(parts.query),
        "".join(f"{name}:{value}\n" for name, value in canonical.items()),
        signed,
        payload_hash,
    ]
    return "\n".join(lines), signed


def _hmac(key: bytes, text: str) -> bytes:
    return hmac.new(key, text.encode("utf-8"), hashlib.sha256).digest()


def sign(
    method: str,
    url: str,
    headers: Mapping[str, str],
    body: bytes,
    *,
    access_key: str,
    secret_key: str,
    session_token: str | None,
    region: str,
    service: str,
    now: datetime,
    content_sha256_header: bool = True,
) -> dict[str, str]:
    """The SigV4 headers of a request: every one of `headers` is signed (plus ``host``, the date,
    the payload hash when `content_sha256_header` and the session token), so pass exactly the
    headers that will be sent and must be covered (``Authorization`` and ``User-Agent`` are never
    signed). `now` is the signing time (an aware datetime; naive means UTC)."""
    when = now.astimezone(UTC) if now.tzinfo is not None else now.replace(tzinfo=UTC)
    amz_date = when.strftime("%Y%m%dT%H%M%SZ")
    day = amz_date[:8]
    payload_hash = hashlib.sha256(body).hexdigest()
    added = {"X-Amz-Date": amz_date}
    if content_sha256_header:
        added["X-Amz-Content-Sha256"] = payload_hash
    if session_token:
        added["X-Amz-Security-Token"] = session_token
    replaced = {name.lower() for name in added}
    to_sign = {k: v for k, v in headers.items() if k.lower() not in replaced}
    to_sign.update(added)
    creq, signed = canonical_request(
        method, url, to_sign, payload_hash, double_encode=service != "s3"
    )
    scope = f"{day}/{region}/{service}/aws4_request"
    string_to_sign = "\n".join(
        [ALGORITHM, amz_date, scope, hashlib.sha256(creq.encode("utf-8")).hexdigest()]
    )
    key = _hmac(("AWS4" + secret_key).encode("utf-8"), day)
    key = _hmac(_hmac(_hmac(key, region), service), "aws4_request")
    signature = hmac.new(key, string_to_sign.encode("utf-8"), hashlib.sha256).hexdigest()
    authorization = (
        f"{ALGORITHM} Credential={access_key}/{scope}, SignedHeaders={signed}, "
        f"Signature={signature}"
    )
    return {"Authorization": authorization, **added}
