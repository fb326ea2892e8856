"""The CLI's configuration: the config file (TOML or YAML) and the session-log URL.

A config file looks like this (TOML; the same keys in YAML)::

    [default]                   # optional: what `modelwire chat` uses without --provider/--model
    provider = "local"
    model = "qwen3:8b"
    system = "You are terse."

    [deepseek]                  # optional: `DeepSeekAdapter.from_config` settings of the
    base_url = "https://api.deepseek.com"   # built-in `deepseek` route (key: $DEEPSEEK_API_KEY)
    max_concurrency = 8         # its client-side rate limits (also requests_per_minute,
                                # tokens_per_minute), as a providers profile takes them

    [providers.local]           # routes of the multi-provider adapter, passed through unchanged
    api = "openai-completions"
    base_url = "http://127.0.0.1:11434/v1"
    models = [{ id = "qwen3:8b" }]

    [mcp.files]                 # MCP servers for `chat --mcp NAME` and `modelwire mcp list`
    command = "npx"
    args = ["-y", "@modelcontextprotocol/server-filesystem", "/srv/notes"]

The `providers` table is handed to `ProvidersAdapter.from_config`, the `deepseek` table to
`DeepSeekAdapter.from_config` and the `mcp` table to `modelwire.mcp.servers_from_config` as they
are; their own validation names the failing field.
"""

from __future__ import annotations

import os
import re
import tomllib
from pathlib import Path
from typing import Final

import msgspec

from ..vocab.redacted import (
    SECRET,
    hidden_env,
    hidden_repr,
    hidden_rich_repr,
    hidden_settings,
)
from .errors import fail

__all__ = [
    "CONFIG_ENV",
    "LOG_ENV",
    "CliConfig",
    "DefaultRoute",
    "default_config_path",
    "default_log_path",
    "default_log_url",
    "load_config",
    "normalize_log_url",
    "resolve_log_url",
]

CONFIG_ENV: Final = "MODELWIRE_CONFIG"
"""Environment variable naming the config file when `--config` is not given."""

LOG_ENV: Final = "MODELWIRE_LOG"
"""Environment variable naming the session-log URL when `--log` is not given."""

_UNKNOWN_FIELD: Final = re.compile(r"Object contains unknown field `(.+?)`(?: - at `(\$[^`]*)`)?")
_SCHEME: Final = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]+):")
"""A URL scheme of two or more letters (a one-letter "scheme" is a Windows drive: a path)."""


class DefaultRoute(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """The route, model and system prompt `chat` uses when the command line names none."""

    provider: str | None = None
    model: str | None = None
    system: str | None = None


class CliConfig(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """A parsed config file; `path` is where it came from (None: no file).

    Its repr hides a literal `api_key` and every header value of the adapter sections, and every
    `env` and `headers` value of the MCP servers.
    """

    default: DefaultRoute = msgspec.field(default_factory=DefaultRoute)
    deepseek: dict[str, object] = msgspec.field(default_factory=dict)
    providers: dict[str, dict[str, object]] = msgspec.field(default_factory=dict)
    mcp: dict[str, dict[str, object]] = msgspec.field(default_factory=dict)
    path: str | None = None

    def _hidden_fields(self) -> dict[str, object]:
        return {
            "deepseek": hidden_settings(self.deepseek),
            "providers": hidden_settings(self.providers),
            "mcp": {name: _hidden_mcp(section) for name, section in self.mcp.items()},
        }

    def __repr__(self) -> str:
        return hidden_repr(self, self._hidden_fields())

    def __rich_repr__(self) -> list[tuple[str, object]]:
        return hidden_rich_repr(self, self._hidden_fields())


def _hidden_mcp(section: dict[str, object]) -> object:
    """An `[mcp.NAME]` section with its `env` shown as a count and its header values hidden."""
    shown = hidden_settings(section)
    env = section.get("env")
    if isinstance(shown, dict) and env is not None:
        shown["env"] = hidden_env(env) if isinstance(env, dict) else SECRET
    return shown


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
    sections = (config.deepseek, *config.providers.values())
    if any("api_key" in section or "headers" in section for section in sections):
        from ..agent.keystore import holds_literal_key, warn_if_readable
        from .keystore import warn

        if holds_literal_key(data):
            warn_if_readable(file, "an API key", warn)
    return msgspec.structs.replace(config, path=str(file))


def _path_text(message: str) -> str:
    """Render msgspec's `... - at `$.a.b`` messages with the key path the file spells."""
    unknown = _UNKNOWN_FIELD.fullmatch(message)
    if unknown is not None:
        field, where = unknown.group(1), unknown.group(2)
        return f"unknown key `{where[2:] + '.' if where and where != '$' else ''}{field}`"
    return message.replace("`$.", "`").replace("`$`", "the top level")


def default_log_path() -> Path:
    """`sessions.db` under the user data dir: the log every command uses without --log."""
    from platformdirs import user_data_dir

    return Path(user_data_dir("modelwire")) / "sessions.db"


def default_log_url(*, create: bool = True) -> str:
    """The default log's URL; `create` makes its directory (a one-line error if it cannot)."""
    path = default_log_path()
    if create:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as err:
            fail(
                f"cannot create the session log directory {path.parent} "
                f"({err.strerror or err}): pass --log PATH (or set ${LOG_ENV}) to a writable "
                "place, or --log memory: for a log that ends with the process"
            )
    return f"sqlite:///{path}"


def _shown(url: str) -> str:
    from ..session.urls import redact_url  # the light module (cli.logs imports this one)

    return redact_url(url)


def resolve_log_url(option: str | None, *, create: bool = True) -> str:
    """`--log` if given, else `$MODELWIRE_LOG`, else the default SQLite file, normalized.

    A plain path (`~` expanded) is a SQLite file; `sqlite:///relative.db` is relative to the
    current directory and `sqlite:////absolute.db` absolute. SQLite URLs come back absolute
    (`sqlite:////…`), so a printed command works from any directory. A missing directory is a
    one-line error, and for a relative `sqlite:///` URL it explains the four-slash form.
    """
    if option:
        return normalize_log_url(option, "--log")
    named = os.environ.get(LOG_ENV)
    if named:
        return normalize_log_url(named, f"${LOG_ENV}")
    return default_log_url(create=create)


def normalize_log_url(raw: str, source: str) -> str:  # noqa: RET503 (the end fails)
    """The canonical form of a log URL or path given by `source` (see `resolve_log_url`)."""
    scheme = _SCHEME.match(raw)
    if scheme is None:
        return _sqlite_file(Path(raw).expanduser(), raw, source, relative_url=False)
    name = scheme.group(1).lower()
    if name == "memory" and raw.lower() in ("memory:", "memory://"):
        return raw
    if name in ("postgresql", "postgres"):
        return raw
    if name == "sqlite":
        if raw[:10].lower() != "sqlite:///" or "?" in raw or "#" in raw:
            fail(
                f"{source} {_shown(raw)!r} is not a SQLite file URL: write sqlite:///relative.db, "
                "sqlite:////absolute/path.db (four slashes), or just the file path"
            )
        path = Path(raw[10:]).expanduser()
        return _sqlite_file(path, raw, source, relative_url=not path.is_absolute())
    fail(
        f"unsupported log URL {_shown(raw)!r} ({source}): use a file path, "
        "sqlite:////absolute/path.db, memory: or postgresql://HOST/DB"
    )


def _sqlite_file(path: Path, raw: str, source: str, *, relative_url: bool) -> str:
    full = Path(os.path.abspath(path))
    if full.is_dir():
        fail(f"{source} {raw!r}: {full} is a directory, not a database file")
    if not full.parent.is_dir():
        hint = ""
        if relative_url:
            absolute = Path("/") / path
            hint = (
                f"; sqlite:/// with three slashes names a path relative to the current directory "
                f"({Path.cwd()}): for the absolute path {absolute} write sqlite:///{absolute} "
                "(four slashes) or pass the path itself"
            )
        fail(f"{source} {raw!r}: directory {full.parent} does not exist{hint}")
    return f"sqlite:///{full}"
