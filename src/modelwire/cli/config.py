"""The CLI's configuration: the config file (TOML or YAML) and the session-log URL.

A config file looks like this (TOML; the same keys in YAML)::

    [default]                   # optional: what `modelwire chat` uses without --provider/--model
    provider = "local"
    model = "qwen3:8b"
    system = "You are terse."

    [deepseek]                  # optional: `DeepSeekAdapter.from_config` settings of the
    base_url = "https://api.deepseek.com"   # built-in `deepseek` route (key: $DEEPSEEK_API_KEY)

    [providers.local]           # routes of the multi-provider adapter, passed through unchanged
    api = "openai-completions"
    base_url = "http://127.0.0.1:11434/v1"
    models = [{ id = "qwen3:8b" }]

The `providers` table is handed to `ProvidersAdapter.from_config` and the `deepseek` table to
`DeepSeekAdapter.from_config` as they are; their own validation names the failing field.
"""

from __future__ import annotations

import os
import re
import tomllib
from pathlib import Path
from typing import Final

import msgspec

from ..vocab.redacted import hidden_repr, hidden_rich_repr, hidden_settings
from .errors import fail

__all__ = [
    "CONFIG_ENV",
    "LOG_ENV",
    "CliConfig",
    "DefaultRoute",
    "default_config_path",
    "default_log_url",
    "load_config",
    "resolve_log_url",
]

CONFIG_ENV: Final = "MODELWIRE_CONFIG"
"""Environment variable naming the config file when `--config` is not given."""

LOG_ENV: Final = "MODELWIRE_LOG"
"""Environment variable naming the session-log URL when `--log` is not given."""

_UNKNOWN_FIELD: Final = re.compile(r"Object contains unknown field `(.+?)`(?: - at `(\$[^`]*)`)?")
_LOG_SCHEMES: Final = ("memory:", "sqlite:///", "postgresql://", "postgres://")


class DefaultRoute(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """The route, model and system prompt `chat` uses when the command line names none."""

    provider: str | None = None
    model: str | None = None
    system: str | None = None


class CliConfig(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """A parsed config file; `path` is where it came from (None: no file).

    Its repr hides a literal `api_key` and every header value of the adapter sections.
    """

    default: DefaultRoute = msgspec.field(default_factory=DefaultRoute)
    deepseek: dict[str, object] = msgspec.field(default_factory=dict)
    providers: dict[str, dict[str, object]] = msgspec.field(default_factory=dict)
    path: str | None = None

    def _hidden_fields(self) -> dict[str, object]:
        return {
            "deepseek": hidden_settings(self.deepseek),
            "providers": hidden_settings(self.providers),
        }

    def __repr__(self) -> str:
        return hidden_repr(self, self._hidden_fields())

    def __rich_repr__(self) -> list[tuple[str, object]]:
        return hidden_rich_repr(self, self._hidden_fields())


def default_config_path() -> Path:
    """`config.toml` under the user config dir (used only when it exists)."""
    from platformdirs import user_config_dir

    return Path(user_config_dir("modelwire")) / "config.toml"


def _parse(path: Path, text: str) -> object:  # noqa: RET503 (every other path fails)
    suffix = path.suffix.lower()
    if suffix in (".yaml", ".yml"):
        import yaml

        try:
            return yaml.safe_load(text)
        except yaml.YAMLError as err:
            mark = getattr(err, "problem_mark", None)
            where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark is not None else ""
            problem = getattr(err, "problem", None) or "invalid YAML"
            fail(f"config file {path} is not valid YAML{where}: {problem}")
    if suffix == ".toml":
        try:
            return tomllib.loads(text)
        except tomllib.TOMLDecodeError as err:
            fail(f"config file {path} is not valid TOML: {err}")
    fail(f"config file {path} must end in .toml, .yaml or .yml")


def load_config(path: str | None) -> CliConfig:
    """Load `path`, else `$MODELWIRE_CONFIG`, else the user config file if present, else no file.

    A named file that is missing, unreadable, malformed or has an unknown key is a `CliError`
    naming the file and the offending key path.
    """
    named = path or os.environ.get(CONFIG_ENV) or None
    if named is None:
        candidate = default_config_path()
        if not candidate.is_file():
            return CliConfig()
        file = candidate
    else:
        file = Path(named).expanduser()
    try:
        text = file.read_text(encoding="utf-8")
    except FileNotFoundError:
        fail(f"config file not found: {file}")
    except (OSError, UnicodeDecodeError) as err:
        fail(f"cannot read config file {file}: {err}")
    data = _parse(file, text)
    if data is None:
        data = {}
    if not isinstance(data, dict):
        fail(f"config file {file} must hold a table of settings, not {type(data).__name__}")
    try:
        config = msgspec.convert(data, CliConfig)
    except msgspec.ValidationError as err:
        fail(f"config file {file}: {_path_text(str(err))}")
    return msgspec.structs.replace(config, path=str(file))


def _path_text(message: str) -> str:
    """Render msgspec's `... - at `$.a.b`` messages with the key path the file spells."""
    unknown = _UNKNOWN_FIELD.fullmatch(message)
    if unknown is not None:
        field, where = unknown.group(1), unknown.group(2)
        return f"unknown key `{where[2:] + '.' if where and where != '$' else ''}{field}`"
    return message.replace("`$.", "`").replace("`$`", "the top level")


def default_log_url() -> str:
    """The embedded SQLite log under the user data dir (the directory is created on demand)."""
    from platformdirs import user_data_dir

    directory = Path(user_data_dir("modelwire"))
    directory.mkdir(parents=True, exist_ok=True)
    return f"sqlite:///{directory / 'sessions.db'}"


def _shown(url: str) -> str:
    from ..session.urls import redact_url  # the light module (cli.logs imports this one)

    return redact_url(url)


def resolve_log_url(option: str | None) -> str:
    """`--log` if given, else `$MODELWIRE_LOG`, else the default SQLite file; checks the scheme."""
    url = option or os.environ.get(LOG_ENV) or default_log_url()
    if not url.startswith(_LOG_SCHEMES):
        fail(
            f"unsupported log URL {_shown(url)!r}: use memory:, sqlite:///PATH "
            "or postgresql://HOST/DB"
        )
    if url.startswith("sqlite:///"):
        db = Path(url.removeprefix("sqlite:///"))
        if not db.is_absolute():
            db = Path.cwd() / db
        if not db.parent.is_dir():
            fail(f"log URL {_shown(url)!r}: directory {db.parent} does not exist")
    return url
