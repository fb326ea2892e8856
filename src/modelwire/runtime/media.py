"""The shape of a `DocumentBlock` or `AudioBlock` in a request (`validation` asks; no I/O).

A document carries exactly one of `data` (bytes) and `url` (an ``http(s)`` URL), a media type of
`DOCUMENT_MEDIA_TYPES` and an optional non-empty `name`; audio carries non-empty bytes of an
`AUDIO_MEDIA_TYPES` type. Whether a route's protocol and model take one is the adapter's
decision (``UNSUPPORTED_CONTENT`` there, still before any I/O).
"""

from __future__ import annotations

from ..vocab import AUDIO_MEDIA_TYPES, DOCUMENT_MEDIA_TYPES, AudioBlock, DocumentBlock

__all__ = ["media_problem"]


def media_problem(block: DocumentBlock | AudioBlock) -> tuple[str, str] | None:
    """(field, reason) for what is wrong with `block`, or None."""
    if isinstance(block, AudioBlock):
        if block.media_type not in AUDIO_MEDIA_TYPES:
            return "media_type", "must be one of " + ", ".join(sorted(AUDIO_MEDIA_TYPES))
        if not isinstance(block.data, bytes) or not block.data:
            return "data", "must be the audio's bytes (non-empty)"
        return None
    if block.media_type not in DOCUMENT_MEDIA_TYPES:
        return "media_type", "must be one of " + ", ".join(sorted(DOCUMENT_MEDIA_TYPES))
    data, url = block.data, block.url
    if (data is None) == (url is None):
        return "data", "give exactly one of data (bytes) and url"
    if data is not None and (not isinstance(data, bytes) or not data):
        return "data", "must be the document's bytes (non-empty)"
    if url is not None and (
        not isinstance(url, str) or not url.startswith(("https://", "http://"))
    ):
        return "url", "must be an http(s) URL"
    name = block.name
    if name is not None and (not isinstance(name, str) or not name.strip()):
        return "name", "must be a non-empty string"
    return None
