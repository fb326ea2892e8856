"""The replay adapter: recorded sessions become deterministic tests (spec section D).

`ReplayAdapter.from_file(export)` / `await ReplayAdapter.from_log(log, session_id)` derive one
scripted provider call per logged `finish` chunk (so the attempts of a retried Step replay as
separate calls) and serve them back chunk for chunk; a sidecar `<export>.override.json` adds what
a successful log cannot hold (a thrown stream, a hang until cancelled). Nothing here performs
provider I/O or reads credentials.
"""

from __future__ import annotations

from .adapter import ReplayAdapter
from .catalog import ReplayCatalog, ReplayModelSpec, ReplayProviderSpec
from .loading import ENV_CHILD_FILES, ENV_FILE, ENV_OVERRIDE
from .override import Override, load_override, parse_override, sidecar_path
from .script import (
    ChunksEntry,
    HangEntry,
    RecordedRequest,
    ReplayCall,
    ReplayEntry,
    ReplayScript,
    ThrowEntry,
    derive_replay_script,
)

__all__ = [
    "ENV_CHILD_FILES",
    "ENV_FILE",
    "ENV_OVERRIDE",
    "ChunksEntry",
    "HangEntry",
    "Override",
    "RecordedRequest",
    "ReplayAdapter",
    "ReplayCall",
    "ReplayCatalog",
    "ReplayEntry",
    "ReplayModelSpec",
    "ReplayProviderSpec",
    "ReplayScript",
    "ThrowEntry",
    "derive_replay_script",
    "load_override",
    "parse_override",
    "sidecar_path",
]
