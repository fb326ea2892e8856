"""`modelwire chat --attach FILE` (repeatable): files sent with the prompt as content blocks.

A file becomes a `DocumentBlock` (``.pdf`` → ``application/pdf``, ``.txt``/``.md`` →
``text/plain``; its name is the file name) or an `AudioBlock` (``.wav``, ``.mp3``, ``.flac``,
``.ogg``, ``.aac``), read whole before anything is sent; whether the route's model takes it is
the adapter's check (``UNSUPPORTED_CONTENT``, before any request). Images need the durable
attachment service, which the CLI does not run: an image file is refused by name, as is any other
kind, a missing file, or one over `MAX_ATTACH_BYTES`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Final

from ..vocab import AudioBlock, ContentBlock, DocumentBlock, TextBlock
from .errors import fail, os_error_text

__all__ = ["MAX_ATTACH_BYTES", "attachment_blocks", "prompt_with_attachments"]

MAX_ATTACH_BYTES: Final = 64 * 1024 * 1024
"""The largest file `--attach` reads (a provider's own limit is checked by its adapter)."""

_DOCUMENTS: Final = {".pdf": "application/pdf", ".txt": "text/plain", ".md": "text/plain"}
_AUDIO: Final = {
    ".wav": "audio/wav",
    ".mp3": "audio/mpeg",
    ".flac": "audio/flac",
    ".ogg": "audio/ogg",
    ".aac": "audio/aac",
}
_IMAGES: Final = (".png", ".jpg", ".jpeg", ".gif", ".webp")


def attachment_blocks(paths: tuple[str, ...]) -> list[ContentBlock]:
    """One block per `--attach` path, in order (a `CliError` naming the first bad file)."""
    out: list[ContentBlock] = []
    for raw in paths:
        path = Path(raw)
        suffix = path.suffix.lower()
        if suffix in _IMAGES:
            fail(
                f"--attach {raw}: images need the durable attachment service, which the CLI "
                "does not run; --attach takes .pdf, .txt, .md, .wav, .mp3, .flac, .ogg, .aac"
            )
        kind = _DOCUMENTS.get(suffix) or _AUDIO.get(suffix)
        if kind is None:
            fail(f"--attach {raw}: unknown kind of file; give .pdf, .txt, .md or audio files")
        try:
            size = path.stat().st_size
            if size > MAX_ATTACH_BYTES:
                fail(f"--attach {raw}: {size} bytes is over the {MAX_ATTACH_BYTES}-byte limit")
            data = path.read_bytes()
        except OSError as exc:
            fail(f"--attach {raw}: {os_error_text(exc)}")
        if not data:
            fail(f"--attach {raw}: the file is empty")
        if suffix in _DOCUMENTS:
            out.append(DocumentBlock(kind, data=data, name=path.name))
        else:
            out.append(AudioBlock(kind, data))
    return out


def prompt_with_attachments(prompt: str, blocks: list[ContentBlock]) -> str | list[ContentBlock]:
    """The turn's input: the prompt alone, or its text followed by the attached blocks."""
    return [TextBlock(prompt), *blocks] if blocks else prompt
