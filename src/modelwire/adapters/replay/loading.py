"""Building replay scripts from exports, sidecars, child exports and live logs (D.1, D.3, D.4).

Exports are read with `sessionfile.load_session_file` (the one JSONL parser): a
malformed or truncated line, a missing seq or an unknown event type fails there, naming the file
and the line. The primary script comes first; child scripts (sessions a primary spawned) follow,
ordered by creation time, then recorded id.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final, Protocol

from ...errors import ErrorCode, HarnessError
from ...events import Event
from .override import apply_override, load_override, sidecar_path
from .script import ReplayScript, derive_replay_script, recorded_routes
from .sessionfile import load_session_file

__all__ = [
    "ENV_CHILD_FILES",
    "ENV_FILE",
    "ENV_OVERRIDE",
    "EventReader",
    "ReplayConfig",
    "load_file_scripts",
    "load_log_scripts",
    "resolve_replay_config",
]

ENV_FILE: Final = "MODELWIRE_REPLAY_FILE"
"""The export to replay when the configuration names none."""
ENV_OVERRIDE: Final = "MODELWIRE_REPLAY_OVERRIDE"
"""The sidecar override when the configuration names none."""
ENV_CHILD_FILES: Final = "MODELWIRE_REPLAY_CHILD_FILES"
"""Child exports, separated by `os.pathsep`, when the configuration names none (empty: none)."""

_CONFIG_KEYS: Final = frozenset(
    {"file", "override_file", "child_files", "providers", "pace_ms", "strict"}
)


class EventReader(Protocol):
    """What replaying a live log needs of it: its events, and a name for messages. Every
    `modelwire.session` log is one; the adapter never imports the session layer."""

    async def read(self, session_id: str) -> list[Event]:
        """Every event of `session_id`, in seq order."""
        ...

    def describe(self) -> str:
        """A short, credential-free name of the log."""
        ...


def _missing(path: str, what: str) -> HarnessError:
    return HarnessError(
        f"replay: {what} not found: {path} — record a session and write it with "
        "modelwire.session.export.export_session first",
        ErrorCode.INVALID_REPLAY_FILE,
    )


def _file_script(path: str, *, primary: bool, override_path: Path | None) -> ReplayScript:
    override = load_override(override_path) if override_path is not None else None
    if override is not None and override.replace is not None:
        # A bare-array sidecar is the whole script: the export is not read at all.
        return ReplayScript("", 0, override.file, apply_override((), override))
    if not Path(path).is_file():
        raise _missing(path, "fixture" if primary else "child fixture")
    loaded = load_session_file(path)
    header = loaded.header
    seed = header.seed_length if header is not None else 0
    derived = derive_replay_script(loaded.events, source=path, lines=loaded.lines, start=seed)
    headers, contexts = recorded_routes(loaded.events)
    return ReplayScript(
        header.session_id if header is not None else "",
        header.created_at if header is not None else loaded.events[0].time,
        path,
        apply_override(derived, override),
        headers,
        contexts,
    )


def _ordered(primary: ReplayScript, children: Sequence[ReplayScript]) -> list[ReplayScript]:
    return [primary, *sorted(children, key=lambda s: (s.created_at, s.session_id))]


def load_file_scripts(
    path: str | os.PathLike[str],
    *,
    override: str | os.PathLike[str] | None = None,
    children: Sequence[str | os.PathLike[str]] = (),
) -> list[ReplayScript]:
    """The primary export's script (patched by its sidecar), then one script per child export.

    `override` defaults to `<path>.override.json`; a sidecar that does not exist is ignored.
    """
    name = os.fspath(path)
    sidecar = sidecar_path(name) if override is None else Path(os.fspath(override))
    primary = _file_script(name, primary=True, override_path=sidecar)
    kids = [_file_script(os.fspath(c), primary=False, override_path=None) for c in children]
    return _ordered(primary, kids)


async def _log_script(log: EventReader, session_id: str) -> ReplayScript:
    events = await log.read(session_id)
    source = f"session {session_id!r} in {log.describe()}"
    headers, contexts = recorded_routes(events)
    created = events[0].time if events else 0
    derived = derive_replay_script(events, source=source)
    return ReplayScript(session_id, created, source, derived, headers, contexts)


async def load_log_scripts(
    log: EventReader,
    session_id: str,
    *,
    override: str | os.PathLike[str] | None = None,
    children: Sequence[str] = (),
) -> list[ReplayScript]:
    """Like `load_file_scripts`, reading sessions of a live log (no sidecar unless `override`)."""
    sidecar = load_override(override) if override is not None else None
    if sidecar is not None and sidecar.replace is not None:
        primary = ReplayScript("", 0, sidecar.file, apply_override((), sidecar))
    else:
        base = await _log_script(log, session_id)
        primary = ReplayScript(
            base.session_id,
            base.created_at,
            base.source,
            apply_override(base.calls, sidecar),
            base.headers,
            base.contexts,
        )
    kids = [await _log_script(log, child) for child in children]
    return _ordered(primary, kids)


@dataclass(frozen=True, slots=True)
class ReplayConfig:
    """A resolved configuration section: what `ReplayAdapter.from_config` builds from."""

    file: str
    override_file: str | None
    child_files: tuple[str, ...]
    providers: Mapping[str, object] | None
    pace_ms: object
    strict: bool


def _bad(message: str) -> HarnessError:
    return HarnessError(f"replay: {message}", ErrorCode.INVALID_CONFIG)


def resolve_replay_config(
    config: Mapping[str, object] | None, env: Mapping[str, str]
) -> ReplayConfig:
    """Validate a snake_case config section, filling `file`, `override_file` and `child_files`
    from `MODELWIRE_REPLAY_FILE`, `MODELWIRE_REPLAY_OVERRIDE`, `MODELWIRE_REPLAY_CHILD_FILES`.
    """
    section = dict(config or {})
    for key in section:
        if key not in _CONFIG_KEYS:
            raise _bad(f'unknown config key "{key}" (expected one of {sorted(_CONFIG_KEYS)})')
    file = section.get("file") or env.get(ENV_FILE) or ""
    if not isinstance(file, str) or not file:
        raise _bad(f"a fixture path is required (config file or ${ENV_FILE})")
    override = section.get("override_file") or env.get(ENV_OVERRIDE) or None
    if override is not None and not isinstance(override, str):
        raise _bad(f"override_file must be a path string, got {override!r}")
    raw_children = section.get("child_files")
    if raw_children is None:
        listed = env.get(ENV_CHILD_FILES, "")
        raw_children = [p for p in listed.split(os.pathsep) if p] if listed else []
    if isinstance(raw_children, str) or not isinstance(raw_children, (list, tuple)):
        raise _bad("child_files must be a list of paths")
    if not all(isinstance(p, str) and p for p in raw_children):
        raise _bad("child_files must contain only non-empty path strings")
    providers = section.get("providers")
    if providers is not None and not isinstance(providers, Mapping):
        raise _bad("providers must be a mapping of route -> provider config")
    strict = section.get("strict", False)
    if not isinstance(strict, bool):
        raise _bad(f"strict must be true or false, got {strict!r}")
    return ReplayConfig(
        file=file,
        override_file=override,
        child_files=tuple(raw_children),
        providers=providers,
        pace_ms=section.get("pace_ms", 0),
        strict=strict,
    )
