"""Stored API keys, the CLI's side: writing `keys.json` (mode 0600) and reading it one-line-safe.

The file and how a route uses its stored key are `modelwire.agent.keystore`'s (the one key store
Python's `open_runtime` reads too): `{"openai": "sk-…"}` in the user config dir, the environment
winning over it. Here it is written whole through a temporary file created with mode 0600 in the
same directory, then renamed over the old one, so it never exists with wider permissions and is
never half-written. No function here ever prints or returns a key inside an error message.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
from collections.abc import Mapping
from pathlib import Path

from ..agent.keystore import KEYS_FILE, keys_path, read_keys, readable_by_others, warn_if_readable
from ..errors import HarnessError
from .errors import fail

__all__ = ["KEYS_FILE", "keys_path", "load_keys", "loose_permissions", "save_keys", "warn"]


def warn(text: str) -> None:
    """One `warning: …` line on stderr (a file holding keys that others may read)."""
    with contextlib.suppress(OSError, ValueError):
        sys.stderr.write(f"warning: {text}\n")


def load_keys(path: Path | None = None, *, using: bool = False) -> dict[str, str]:
    """The stored keys by route ({} when there is no file); a malformed file is a `CliError`.
    `using` (the keys are about to be used): warn once if others may read the file."""
    file = path or keys_path()
    try:
        keys = read_keys(file)
    except HarnessError as err:
        fail(err.message)
    if using and keys:
        warn_if_readable(file, "API keys", warn)
    return keys


def loose_permissions(path: Path | None = None) -> str | None:
    """The file's mode as `0644` when others than the owner may read it, else None."""
    return readable_by_others(path or keys_path())


def save_keys(keys: Mapping[str, str], path: Path | None = None) -> Path:
    """Write `keys` to the key file (mode 0600, directory 0700 when created); returns its path.

    A directory that cannot be created or written is a one-line `CliError` naming the key file
    (never the temporary file beside it).
    """
    file = path or keys_path()
    payload = json.dumps(dict(sorted(keys.items())), indent=2).encode("utf-8") + b"\n"
    temporary = file.with_name(f".{file.name}.{os.getpid()}.tmp")
    try:
        file.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            if hasattr(os, "fchmod"):
                os.fchmod(fd, 0o600)  # whatever the umask
            os.write(fd, payload)
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(temporary, file)
    except OSError as err:
        with contextlib.suppress(OSError):
            temporary.unlink(missing_ok=True)
        fail(f"cannot write the key file {file}: {err.strerror or err}")
    return file
