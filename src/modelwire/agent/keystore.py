"""The one key store: keys `modelwire keys set ROUTE` stored, read by the CLI and by Python alike.

`keys.json` in the user config dir maps route names to keys (`{"openai": "sk-…"}`), mode 0600
(the CLI writes it, `cli.keystore`). A route uses its stored key only while the environment
leaves every one of its key variables unset or blank: the environment always wins
(`StoredKeyEnvironment`, a live view of `os.environ` with the stored keys behind it).

A file that holds a secret — the key file, or a config file with a literal key — and that others
than its owner may read is used anyway, with one warning per file and process, as ssh warns
about a private key others can read (`warn_if_readable`). No function here puts a key in a
message.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Final

from ..errors import ErrorCode, HarnessError

__all__ = [
    "KEYS_FILE",
    "StoredKeyEnvironment",
    "holds_literal_key",
    "keys_path",
    "read_keys",
    "readable_by_others",
    "warn_if_readable",
]

KEYS_FILE: Final = "keys.json"

_WARNED: set[str] = set()
"""Files already warned about in this process (one warning per file)."""


def keys_path() -> Path:
    """`keys.json` under the user config dir (`$XDG_CONFIG_HOME/modelwire` on Linux)."""
    from platformdirs import user_config_dir

    return Path(user_config_dir("modelwire")) / KEYS_FILE


def read_keys(path: Path | None = None) -> dict[str, str]:
    """The stored keys by route ({} when there is no file); an unreadable or malformed file is
    `INVALID_CONFIG` naming it (never its content)."""
    file = path or keys_path()
    try:
        text = file.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except (OSError, UnicodeDecodeError) as err:
        reason = getattr(err, "strerror", None) or type(err).__name__
        raise HarnessError(
            f"cannot read the key file {file}: {reason}", ErrorCode.INVALID_CONFIG
        ) from None
    try:
        data = json.loads(text)
    except ValueError:
        data = None
    if not isinstance(data, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in data.items()
    ):
        raise HarnessError(
            f"the key file {file} must map route names to key strings: fix it or remove it "
            "(`modelwire keys rm ROUTE`, or delete the file)",
            ErrorCode.INVALID_CONFIG,
        )
    return dict(data)


def readable_by_others(path: Path) -> str | None:
    """The file's mode as `0644` when others than its owner may read or write it, else None
    (also where modes mean nothing: not POSIX, or no such file)."""
    if os.name != "posix":
        return None
    try:
        mode = stat.S_IMODE(path.stat().st_mode)
    except OSError:
        return None
    return f"{mode:04o}" if mode & 0o077 else None


def warn_if_readable(path: Path, holds: str, warn: Callable[[str], None]) -> None:
    """Tell `warn` once per process that `path`, which holds `holds` (e.g. "API keys"), is
    readable by others; nothing when it is private."""
    mode = readable_by_others(path)
    key = str(path)
    if mode is None or key in _WARNED:
        return
    _WARNED.add(key)
    warn(
        f"{path} holds {holds} but has mode {mode}, so other users can read it: "
        f"run `chmod 600 {path}` (used anyway)"
    )


def holds_literal_key(settings: Mapping[str, object]) -> bool:
    """Whether config `settings` spell a key out: `api_key` in `[deepseek]` or a provider, or a
    credential header among their `headers` (``Authorization``, ``X-Gateway-Token``, …)."""
    from ..wire.credentials import credential_values

    sections = [settings.get("deepseek")]
    providers = settings.get("providers")
    if isinstance(providers, Mapping):
        sections.extend(providers.values())
    for section in sections:
        if not isinstance(section, Mapping):
            continue
        headers = section.get("headers")
        if section.get("api_key") or (
            isinstance(headers, Mapping)
            and credential_values({str(k): str(v) for k, v in headers.items()})
        ):
            return True
    return False


class StoredKeyEnvironment(Mapping[str, str]):
    """An environment (the process's, read live, by default) with stored keys behind it.

    `keys` maps routes to stored keys and `key_vars` routes to the variables their key is read
    from. The first variable of a route with a stored key reads as that key while the
    environment leaves every variable of the route unset or blank; every other read is the
    environment's own.
    """

    __slots__ = ("_environ", "_fallback")

    def __init__(
        self,
        keys: Mapping[str, str],
        key_vars: Mapping[str, tuple[str, ...]],
        environ: Mapping[str, str] | None = None,
    ) -> None:
        self._environ = os.environ if environ is None else environ
        self._fallback = {
            names[0]: (key, names)
            for route, key in keys.items()
            if (names := key_vars.get(route, ()))
        }

    def _blank(self, name: str) -> bool:
        return not self._environ.get(name, "").strip()

    def __getitem__(self, name: str) -> str:
        stored = self._fallback.get(name)
        if stored is not None and all(self._blank(n) for n in stored[1]):
            return stored[0]
        return self._environ[name]

    def __iter__(self) -> Iterator[str]:
        yield from self._environ
        yield from (name for name in self._fallback if name not in self._environ)

    def __len__(self) -> int:
        return len(set(self._environ) | set(self._fallback))

    def source(self, names: tuple[str, ...]) -> str | None:
        """Where a route reading `names` gets its key now: `env`, `stored` or None."""
        if not all(self._blank(n) for n in names):
            return "env"
        return "stored" if names and names[0] in self._fallback else None
