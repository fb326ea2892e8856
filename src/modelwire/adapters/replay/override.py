"""The sidecar override file (`<export>.override.json`, D.3): what a successful log cannot contain.

Document forms (snake_case keys)::

    [entry, ...]                                   replaces the derived script entirely
    {"patches": [{"at": 1, "entry": entry}, ...]}  replaces call `at`, or appends at == length

Entries::

    {"kind": "chunks", "chunks": [chunk, ...]}
    {"kind": "throw", "chunks": [chunk, ...], "message": "...", "code": "...",
     "status"?: 503, "provider_retry_after_ms"?: 1000, "request_id"?: "..."}
    {"kind": "hang"}  or  {"kind": "hang", "ready_file": "/tmp/ready"}

Chunks use the log's JSON form (`{"type": "text-delta", "index": 0, "text": "hi"}`). Every
violation raises `INVALID_REPLAY_FILE` naming the file and the field (`patches[0].at`,
`entries[2].chunks[1]`, ...). At most `MAX_OVERRIDE_BYTES` are read, and a document nested
deeper than `MAX_JSON_DEPTH` levels is refused before it reaches the decoder.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import msgspec

from ...errors import ErrorCode, HarnessError, LlmError
from ...vocab import StreamChunk
from ...vocab.json import MAX_JSON_DEPTH, json_nesting_exceeds
from ...vocab.json import MAX_SAFE_INT as _MAX_SAFE_INT
from .script import ChunksEntry, HangEntry, ReplayCall, ReplayEntry, ThrowEntry, make_call

__all__ = [
    "MAX_OVERRIDE_BYTES",
    "Override",
    "apply_override",
    "load_override",
    "parse_override",
    "sidecar_path",
]

MAX_OVERRIDE_BYTES: Final = 64 * 1024 * 1024
"""The largest sidecar read (64 MiB): a hand-written script, far below it."""

_CHUNK_TYPES: Final = frozenset(
    {
        "block-start",
        "text-delta",
        "reasoning-delta",
        "tool-call-delta",
        "block-end",
        "usage",
        "finish",
    }
)
_THROW_REQUIRED: Final = frozenset({"kind", "chunks", "message", "code"})
_THROW_OPTIONAL: Final = frozenset({"status", "provider_retry_after_ms", "request_id"})


@dataclass(frozen=True, slots=True)
class Override:
    """A parsed sidecar: either a full `replace`ment script or `patches` `(at, entry)` in order."""

    file: str
    replace: tuple[ReplayEntry, ...] | None
    patches: tuple[tuple[int, ReplayEntry], ...] = ()


def sidecar_path(export: str | os.PathLike[str]) -> Path:
    """The default sidecar of an export: `<export>.override.json` beside it."""
    return Path(f"{os.fspath(export)}.override.json")


_MAX_DETAIL: Final = 300
"""Error details are cut to this many characters: a message never carries the file's content."""


def _bad(file: str, location: str, detail: str) -> HarnessError:
    if len(detail) > _MAX_DETAIL:
        detail = f"{detail[:_MAX_DETAIL]}…"
    return HarnessError(
        f"replay: invalid override {file}: {location} {detail}", ErrorCode.INVALID_REPLAY_FILE
    )


def load_override(path: str | os.PathLike[str]) -> Override | None:
    """Read and validate a sidecar; None when the file does not exist (D9: then it is ignored)."""
    file = os.fspath(path)
    try:
        with open(file, "rb") as fh:
            blob = fh.read(MAX_OVERRIDE_BYTES + 1)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise _bad(file, "document", f"cannot be read ({exc.strerror or exc})") from exc
    except MemoryError:
        raise _bad(file, "document", "is too large to read (out of memory)") from None
    if len(blob) > MAX_OVERRIDE_BYTES:
        raise _bad(file, "document", f"is larger than the {MAX_OVERRIDE_BYTES}-byte limit")
    if json_nesting_exceeds(blob, MAX_JSON_DEPTH):
        raise _bad(file, "document", f"nests JSON deeper than {MAX_JSON_DEPTH} levels")
    try:
        doc: object = msgspec.json.decode(blob)
    except msgspec.DecodeError as exc:
        raise _bad(file, "document", f"is not valid JSON ({exc})") from exc
    except (RecursionError, MemoryError):
        raise _bad(file, "document", "is too large or too deeply nested to decode") from None
    return parse_override(doc, file)


def parse_override(doc: object, file: str = "<override>") -> Override:
    """Validate a decoded sidecar document (see the module docstring for the accepted shapes)."""
    if isinstance(doc, list):
        entries = tuple(parse_entry(item, file, f"entries[{i}]") for i, item in enumerate(doc))
        return Override(file, entries)
    if isinstance(doc, dict) and set(doc) == {"patches"} and isinstance(doc["patches"], list):
        patches: list[tuple[int, ReplayEntry]] = []
        seen: set[int] = set()
        for i, patch in enumerate(doc["patches"]):
            where = f"patches[{i}]"
            if not isinstance(patch, dict):
                raise _bad(file, where, "must be an object")
            if set(patch) != {"at", "entry"}:
                raise _bad(file, where, "must contain exactly at and entry")
            at = patch["at"]
            if type(at) is not int or not 0 <= at <= _MAX_SAFE_INT:
                raise _bad(file, f"{where}.at", f"must be a non-negative integer, got {at!r}")
            if at in seen:
                raise _bad(file, f"{where}.at", f"duplicate override patch index {at}")
            seen.add(at)
            patches.append((at, parse_entry(patch["entry"], file, f"{where}.entry")))
        return Override(file, None, tuple(patches))
    raise _bad(file, "document", 'must be a list of entries or {"patches": [...]}')


def _chunks(value: object, file: str, where: str) -> tuple[StreamChunk, ...]:
    if not isinstance(value, list):
        raise _bad(file, f"{where}.chunks", "must be an array")
    out: list[StreamChunk] = []
    for j, raw in enumerate(value):
        spot = f"{where}.chunks[{j}]"
        if not isinstance(raw, dict):
            raise _bad(file, spot, "must be an object")
        if raw.get("type") not in _CHUNK_TYPES:
            raise _bad(file, spot, f"must have a known StreamChunk type, got {raw.get('type')!r}")
        try:
            out.append(msgspec.convert(raw, StreamChunk))
        except msgspec.ValidationError as exc:
            raise _bad(file, spot, f"is not a valid {raw['type']} chunk ({exc})") from exc
    return tuple(out)


def _text(entry: Mapping[str, object], key: str, file: str, where: str) -> str:
    value = entry.get(key)
    if not isinstance(value, str) or not value:
        raise _bad(file, f"{where}.{key}", "must be a non-empty string")
    return value


def parse_entry(value: object, file: str, where: str) -> ReplayEntry:
    """Validate one entry object at `where` (a field path used in error messages)."""
    if not isinstance(value, dict):
        raise _bad(file, where, "must be an object")
    kind = value.get("kind")
    keys = set(value)
    if kind == "chunks":
        if keys != {"kind", "chunks"}:
            raise _bad(file, where, "has invalid chunks-entry fields (expected kind, chunks)")
        return ChunksEntry(_chunks(value["chunks"], file, where))
    if kind == "throw":
        if not keys >= _THROW_REQUIRED or not keys <= _THROW_REQUIRED | _THROW_OPTIONAL:
            raise _bad(
                file,
                where,
                "has invalid throw-entry fields (expected kind, chunks, message, code and "
                "optionally status, provider_retry_after_ms, request_id)",
            )
        chunks = _chunks(value["chunks"], file, where)
        message = _text(value, "message", file, where)
        code = _text(value, "code", file, where)
        try:
            error = LlmError(
                message,
                code,
                status=value.get("status"),
                provider_retry_after_ms=value.get("provider_retry_after_ms"),
                request_id=value.get("request_id"),
            )
        except ValueError as exc:
            raise _bad(file, where, f"has an invalid failure ({exc})") from exc
        return ThrowEntry(chunks, error.failure)
    if kind == "hang":
        if not {"kind"} <= keys <= {"kind", "ready_file"}:
            raise _bad(file, where, "has invalid hang-entry fields (expected kind, ready_file)")
        if "ready_file" in value:
            return HangEntry(_text(value, "ready_file", file, where))
        return HangEntry()
    raise _bad(file, f"{where}.kind", f'has unknown kind "{kind}"')


def apply_override(
    derived: Sequence[ReplayCall], override: Override | None
) -> tuple[ReplayCall, ...]:
    """The primary script after the sidecar: replaced, patched in place, or appended (D8).

    A patch beyond the derived length names the file and the field and the derived length.
    """
    if override is None:
        return tuple(derived)
    if override.replace is not None:
        return tuple(
            make_call(entry, None, f"override entries[{i}]")
            for i, entry in enumerate(override.replace)
        )
    calls = list(derived)
    length = len(calls)
    appended: dict[int, ReplayCall] = {}
    for i, (at, entry) in enumerate(override.patches):
        call = make_call(entry, None, f"override patches[{i}]")
        if at < length:
            calls[at] = call
        elif at == length:
            appended[at] = call
        else:
            raise _bad(
                override.file,
                f"patches[{i}].at",
                f"names call {at}, which does not exist: override patch index {at} out of "
                f"range (derived script has {length} call(s); == length appends)",
            )
    calls.extend(appended[k] for k in sorted(appended))
    return tuple(calls)
