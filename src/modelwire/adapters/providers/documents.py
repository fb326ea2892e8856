"""Documents and audio in a request: which protocol and model take them, checked before any I/O.

A route sends a `DocumentBlock` when its protocol has a document part and its model reads
documents: the model's `input` modalities name ``document``, or ``image`` (the providers read
PDFs with their vision models; pi-ai's catalog lists only text and image). `AudioBlock` needs
``audio`` among the model's modalities (set it in the route's config entry: ``input = ["text",
"audio"]``) and a protocol with an audio part. Anything else is ``UNSUPPORTED_CONTENT`` naming
the route, model and what is missing; a document over the protocol's size limit too, naming the
limit. Both are sent from user messages only.

| protocol | document (bytes) | document (URL) | text/plain | audio | document limit |
|---|---|---|---|---|---|
| anthropic-messages, -bedrock, -vertex | ``document`` base64 | ``document`` url | ``text`` source | — | 32 MB |
| openai-completions, azure-openai-completions | ``file`` (``file_data``) | — | — | ``input_audio`` wav/mp3 | 32 MB |
| openai-responses, azure-openai-responses | ``input_file`` | ``input_file`` (``file_url``) | — | — | 32 MB |
| google-generative-ai | ``inlineData`` | ``fileData`` | yes | ``inlineData`` | 20 MB |
| bedrock-converse-stream | ``document`` (pdf, txt) | — | yes | — | 4.5 MB |
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final, NamedTuple

from ...errors import ErrorCode, LlmError
from ...vocab import AudioBlock, DocumentBlock, Message, ToolResultBlock
from .materialize import ModelDescriptor

__all__ = ["MediaSupport", "check_media", "media_support"]


class MediaSupport(NamedTuple):
    """What one protocol takes: documents by bytes / by URL, plain-text documents, audio
    media types, and the largest document in bytes."""

    documents: bool
    urls: bool
    text: bool
    audio: frozenset[str]
    limit: int


_MB: Final = 1_000_000
_NONE: Final = MediaSupport(False, False, False, frozenset(), 0)
_ANTHROPIC: Final = MediaSupport(True, True, True, frozenset(), 32 * _MB)
_CHAT: Final = MediaSupport(
    True, False, False, frozenset({"audio/wav", "audio/x-wav", "audio/mpeg", "audio/mp3"}), 32 * _MB
)
_RESPONSES: Final = MediaSupport(True, True, False, frozenset(), 32 * _MB)
_GEMINI: Final = MediaSupport(
    True,
    True,
    True,
    frozenset(
        {
            "audio/wav",
            "audio/x-wav",
            "audio/mpeg",
            "audio/mp3",
            "audio/flac",
            "audio/ogg",
            "audio/aac",
        }
    ),
    20 * _MB,
)
_BEDROCK: Final = MediaSupport(True, False, True, frozenset(), 4_500_000)
_SUPPORT: Final = {
    "anthropic-messages": _ANTHROPIC,
    "anthropic-bedrock": _ANTHROPIC,
    "anthropic-vertex": _ANTHROPIC,
    "openai-completions": _CHAT,
    "azure-openai-completions": _CHAT,
    "openai-responses": _RESPONSES,
    "azure-openai-responses": _RESPONSES,
    "google-generative-ai": _GEMINI,
    "bedrock-converse-stream": _BEDROCK,
}


def media_support(api: str) -> MediaSupport:
    """What protocol `api` takes (nothing for one without document or audio parts)."""
    return _SUPPORT.get(api, _NONE)


def _media(messages: Sequence[Message]) -> list[tuple[Message, DocumentBlock | AudioBlock]]:
    out: list[tuple[Message, DocumentBlock | AudioBlock]] = []
    for message in messages:
        stack = list(reversed(message.content))
        while stack:
            block = stack.pop()
            if isinstance(block, (DocumentBlock, AudioBlock)):
                out.append((message, block))
            elif isinstance(block, ToolResultBlock):
                stack.extend(reversed(block.content))
    return out


def _mb(size: int) -> str:
    return f"{size / _MB:.1f} MB"


def check_media(messages: Sequence[Message], model: ModelDescriptor) -> None:
    """Refuse (``UNSUPPORTED_CONTENT``) every document or audio block `model`'s route cannot send."""
    found = _media(messages)
    if not found:
        return
    where = f'provider "{model.provider}" model "{model.id}" ({model.api})'
    support = media_support(model.api)
    for message, block in found:
        if message.role != "user":
            raise LlmError(
                f"{where}: documents and audio are sent from user messages, not from a "
                f"{message.role} message",
                ErrorCode.UNSUPPORTED_CONTENT,
            )
        if isinstance(block, AudioBlock):
            if "audio" not in model.input:
                raise LlmError(
                    f"{where} does not accept audio (its input is {', '.join(model.input)}; a "
                    'model that does is listed with input = ["text", "audio"])',
                    ErrorCode.UNSUPPORTED_CONTENT,
                )
            if block.media_type not in support.audio:
                takes = ", ".join(sorted(support.audio)) if support.audio else "no audio"
                raise LlmError(
                    f"{where} cannot send {block.media_type} audio; this protocol takes {takes}",
                    ErrorCode.UNSUPPORTED_CONTENT,
                )
            continue
        label = f'document "{block.name}"' if block.name else "a document"
        if not support.documents:
            raise LlmError(f"{where} cannot send documents", ErrorCode.UNSUPPORTED_CONTENT)
        if "document" not in model.input and "image" not in model.input:
            raise LlmError(
                f"{where} does not accept documents (its input is {', '.join(model.input)})",
                ErrorCode.UNSUPPORTED_CONTENT,
            )
        if block.media_type == "text/plain" and not support.text:
            raise LlmError(
                f"{where} takes PDF documents only, not text/plain ({label})",
                ErrorCode.UNSUPPORTED_CONTENT,
            )
        if block.url is not None and not support.urls:
            raise LlmError(
                f"{where} cannot send a document by URL ({label}); give its bytes as data",
                ErrorCode.UNSUPPORTED_CONTENT,
            )
        size = len(block.data) if block.data is not None else 0
        if size > support.limit:
            raise LlmError(
                f"{where}: {label} is {_mb(size)} ({size} bytes); {model.api} takes documents "
                f"of at most {_mb(support.limit)} ({support.limit} bytes)",
                ErrorCode.UNSUPPORTED_CONTENT,
            )
