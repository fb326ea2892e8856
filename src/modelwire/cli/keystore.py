"""Stored API keys: `keys.json` in the user config dir, readable by its owner only (mode 0600).

The file maps route names to keys: `{"openai": "sk-…"}`. It is written whole through a temporary
file created with mode 0600 in the same directory, then renamed over the old one, so it never
exists with wider permissions and is never half-written. The environment wins over it: a route
uses its stored key only while its key variable is unset (`routes.build_routes`). No function here
ever prints or returns a key inside an error message.
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
from collections.abc import Mapping
from pathlib import Path

from .errors import fail

__all__ = ["KEYS_FILE", "keys_path", "load_keys", "loose_permissions", "save_keys"]

KEYS_FILE = "keys.json"


def keys_path() -> Path:
    """`keys.json` under the user config dir (`$XDG_CONFIG_HOME/modelwire` on Linux)."""
    from platformdirs import user_config_dir

    return Path(user_config_dir("modelwire")) / KEYS_FILE


def load_keys(path: Path | None = None) -> dict[str, str]:
    """The stored keys by route ({} when there is no file); a malformed file is a `CliError`."""
    file = path or keys_path()
    try:
        text = file.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except (OSError, UnicodeDecodeError) as err:
        fail(f"cannot read the key file {file}: {getattr(err, 'strerror', None) or err}")
    try:
        data = json.loads(text)
    except ValueError:
        fail(f"the key file {file} is not valid JSON: fix it or remove it (`modelwire keys rm`)")
    if not isinstance(data, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in data.items()
    ):
        fail(f"the key file {file} must map route names to key strings")
    return dict(data)


def loose_permissions(path: Path | None = None) -> str | None:
    """The file's mode as `0644` when others than the owner may read it, else None."""
    file = path or keys_path()
    try:
        mode = stat.S_IMODE(file.stat().st_mode)
    except OSError:
        return None
    return f"{mode:04o}" if mode & 0o077 else None


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
