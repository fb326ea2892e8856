"""`modelwire config path`: where the config file is on this machine, and whether it exists.

The file in effect is `--config FILE`, else `$MODELWIRE_CONFIG`, else `config.toml` in the user
config dir (`~/.config/modelwire` on Linux, `~/Library/Application Support/modelwire` on macOS,
`%LOCALAPPDATA%\\modelwire` on Windows), used only when it exists. Creates nothing.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import msgspec

from .config import CONFIG_ENV, default_config_path

__all__ = ["print_config_path"]


def _in_effect(option: str | None) -> tuple[Path, str]:
    """The config file `--config`/`$MODELWIRE_CONFIG`/the default names, and which one did."""
    named = option or os.environ.get(CONFIG_ENV) or None
    source = "--config" if option else (f"${CONFIG_ENV}" if named else "default")
    return (Path(named).expanduser().absolute() if named else default_config_path()), source


async def print_config_path(option: str | None, *, as_json: bool) -> int:
    """Print the config file's path (stdout) and whether it exists (stderr, or in the JSON)."""
    from .keystore import keys_path

    path, source = _in_effect(option)
    exists = path.is_file()
    if as_json:
        out = {
            "path": str(path),
            "exists": exists,
            "source": source,
            "default": str(default_config_path()),
            "keys": str(keys_path()),
            "keys_exist": keys_path().is_file(),
        }
        sys.stdout.write(msgspec.json.encode(out).decode() + "\n")
        return 0
    sys.stdout.write(f"{path}\n")
    where = "the default, in the user config dir" if source == "default" else f"from {source}"
    state = (
        "exists"
        if exists
        else "does not exist yet: create it to add routes or a [default] model (every section "
        "is optional; see the README's Configuration section)"
    )
    sys.stderr.write(f"{where}; {state}\n")
    return 0
