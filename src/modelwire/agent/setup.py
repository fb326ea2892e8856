"""One-line setup: `open_runtime(config=None)`, the default session log, and a log opened lazily.

`open_runtime` registers, on a fresh `LlmRuntime`, every route a user has without writing code:

- the routes of the config file's `[providers.<route>]` sections (`ProvidersAdapter`);
- every provider of the installed model catalog (keys read from the environment on each call,
  e.g. `OPENAI_API_KEY`; a missing one is `MISSING_CREDENTIAL` naming the variable);
- the built-in `deepseek` route (`DeepSeekAdapter`, settings from the file's `[deepseek]` section,
  key `$DEEPSEEK_API_KEY`), unless the file declares its own `deepseek` provider.

Keys come from the environment, read on every call, and — for a route whose variables are all
unset — from the key store `modelwire keys set ROUTE` writes (`keystore.py`), as the CLI reads
them. The file's `[default]` section names the model a caller that names none uses
(`model = "route:model"`, or `provider` and `model` apart): it becomes `runtime.default_model`
(`Agent.from_model()` without a model); a route no config serves is `INVALID_CONFIG` naming it.

The config file is the one the CLI reads (`config=` a path, else `$MODELWIRE_CONFIG`, else
`config.toml` in the user config dir when it exists), or `config=` a mapping of the same keys
(`default`, `deepseek`, `providers`; `gateway` is `modelwire serve`'s and ignored here); a bad
file or key is `INVALID_CONFIG` naming it.

The default log is `$MODELWIRE_LOG`, else `sessions.db` (SQLite) in the user data dir, as for the
CLI. `LazyLog` opens a log URL on first use in the loop that uses it: `Agent.from_model` is
synchronous, and its log belongs to the loop that runs its turns (the sync calls' loop for
`run_sync`).
"""

from __future__ import annotations

import asyncio
import os
import warnings
from collections.abc import Collection, Mapping, Sequence
from pathlib import Path
from typing import Final, TypeAlias

from ..errors import ErrorCode, HarnessError
from ..runtime import LlmRuntime
from ..runtime.registry import unknown_route_text
from ..runtime.sync import on_bridge_exit, on_sync_loop
from ..session import open_log
from ..session.lease import Decision, Lease, LeaseRow
from ..session.log import ChunkWriter, Row, SessionInfo, SessionLog, StoredRow
from ..session.urls import redact_url
from .keystore import (
    StoredKeyEnvironment,
    holds_literal_key,
    keys_path,
    read_keys,
    warn_if_readable,
)

__all__ = [
    "BUILTIN_ROUTE",
    "CONFIG_ENV",
    "LOG_ENV",
    "ConfigSource",
    "LazyLog",
    "default_log_url",
    "default_route_model",
    "load_settings",
    "open_runtime",
    "route_key_vars",
    "served_model",
    "split_model",
    "unknown_route",
]

ConfigSource: TypeAlias = str | os.PathLike[str] | Mapping[str, object] | None
"""Where `open_runtime` reads its settings: a file path, a parsed mapping, or None (the default)."""

CONFIG_ENV: Final = "MODELWIRE_CONFIG"
LOG_ENV: Final = "MODELWIRE_LOG"
BUILTIN_ROUTE: Final = "deepseek"
_SECTIONS: Final = ("default", "deepseek", "providers", "gateway")  # gateway: `modelwire serve`
_DEFAULT_KEYS: Final = ("provider", "model", "system")


def _fail(text: str) -> HarnessError:
    return HarnessError(text, ErrorCode.INVALID_CONFIG)


def _config_file(config: str | os.PathLike[str] | None) -> Path | None:
    named = os.fspath(config) if config is not None else os.environ.get(CONFIG_ENV) or None
    if named is not None:
        return Path(named).expanduser()
    from platformdirs import user_config_dir

    candidate = Path(user_config_dir("modelwire")) / "config.toml"
    return candidate if candidate.is_file() else None


def load_settings(config: ConfigSource) -> tuple[dict[str, object], str]:
    """The settings `config` names (module docstring) and where they came from."""
    if isinstance(config, Mapping):
        settings, where = dict(config), "config"
    else:
        file = _config_file(config)
        if file is None:
            return {}, "config"
        if not file.is_file():
            raise _fail(f"config file not found: {file}")
        from ..adapters.providers.config import load_config_file

        try:
            settings, where = load_config_file(file), f"config file {file}"
        except OSError as exc:
            raise _fail(f"cannot read config file {file}: {exc}") from exc
        if holds_literal_key(settings):
            warn_if_readable(file, "an API key", _warn)
    for key, value in settings.items():
        if key not in _SECTIONS:
            raise _fail(f"{where}: unknown key {key!r} (known: {', '.join(_SECTIONS)})")
        if not isinstance(value, Mapping):
            raise _fail(f"{where}: {key} must be a table of settings")
    return settings, where


def open_runtime(
    config: ConfigSource = None, *, env: Mapping[str, str] | None = None
) -> LlmRuntime:
    """A runtime serving the built-in DeepSeek route, the config file's routes and the installed
    catalog's providers, with the `[default]` model (module docstring). `env` replaces the
    process environment and the key store for keys."""
    from ..adapters.deepseek import DeepSeekAdapter
    from ..adapters.providers import ProvidersAdapter
    from ..adapters.providers.catalog import load_catalog

    settings, where = load_settings(config)
    configured = settings.get("providers")
    profiles: dict[str, object] = dict(configured) if isinstance(configured, Mapping) else {}
    section = settings.get(BUILTIN_ROUTE)
    deepseek_settings = dict(section) if isinstance(section, Mapping) else {}
    key_vars = route_key_vars(profiles, deepseek_settings)
    for provider, listed in load_catalog().providers.items():
        if provider != BUILTIN_ROUTE:
            profiles.setdefault(provider, {})
            key_vars.setdefault(provider, listed.api_key_env)
    if env is None:
        stored = read_keys()
        if stored:
            warn_if_readable(keys_path(), "API keys", _warn)
        env = StoredKeyEnvironment(stored, key_vars)
    runtime = LlmRuntime()
    try:
        ProvidersAdapter.from_config({"providers": profiles}, env=env).register(runtime)
        if BUILTIN_ROUTE not in profiles:
            deepseek = DeepSeekAdapter.from_config(deepseek_settings, env=env)
            runtime.register_adapter([BUILTIN_ROUTE], deepseek)
    except HarnessError as exc:
        raise HarnessError(f"{where}: {exc.message}", exc.code, cause=exc) from exc
    default = settings.get("default")
    chosen = default_route_model(default, (*profiles, BUILTIN_ROUTE), where) if default else None
    if chosen is not None and chosen[1] is not None:
        runtime.default_model = f"{chosen[0]}:{chosen[1]}"
    return runtime


def _warn(text: str) -> None:
    warnings.warn(text, UserWarning, stacklevel=4)


def route_key_vars(
    providers: Mapping[str, object], deepseek: Mapping[str, object]
) -> dict[str, tuple[str, ...]]:
    """The variables each configured route and the built-in `deepseek` one read their key from
    (first set one wins): a profile's `api_key_env`, else its catalog provider's variables."""
    from ..adapters.providers.catalog import load_catalog

    catalog = load_catalog().providers
    out: dict[str, tuple[str, ...]] = {}
    for name, profile in providers.items():
        named = profile.get("api_key_env") if isinstance(profile, Mapping) else None
        listed = catalog.get(name)
        out[name] = (named,) if isinstance(named, str) else (listed.api_key_env if listed else ())
    if BUILTIN_ROUTE not in out:
        named = deepseek.get("api_key_env", "DEEPSEEK_API_KEY")
        out[BUILTIN_ROUTE] = (named,) if isinstance(named, str) else ()
    return out


def unknown_route(route: str, routes: Collection[str], what: str, code: str) -> HarnessError:
    """`code`: `what` names route `route`, which none of `routes` is (the known ones listed)."""
    return HarnessError(
        f"{what}: {unknown_route_text(route, routes)}; see `modelwire providers`", code
    )


def default_route_model(
    section: object, routes: Collection[str], where: str
) -> tuple[str, str | None] | None:
    """The route and model a config's `[default]` section names (None: neither), checked:
    `model = "route:model"` (split at the first colon) or `provider` with a `model` of it; the
    route must be one of `routes`. Anything else is `INVALID_CONFIG` naming the key."""
    if not isinstance(section, Mapping):
        raise _fail(f"{where}: default must be a table of settings")
    for key, value in section.items():
        if key not in _DEFAULT_KEYS:
            raise _fail(f"{where}: unknown key default.{key} (known: {', '.join(_DEFAULT_KEYS)})")
        if value is not None and not (isinstance(value, str) and value.strip()):
            raise _fail(f"{where}: default.{key} must be a non-empty string, got {value!r}")
    provider, model = section.get("provider"), section.get("model")
    if provider is None and model is None:
        return None
    what = f"{where}: default.provider"
    if provider is None:  # "route:model", or a model of the built-in route
        provider, model = split_model(model) if ":" in str(model) else (BUILTIN_ROUTE, model)
        what = f"{where}: default.model {section.get('model')!r}"
    assert isinstance(provider, str)
    if provider not in routes:
        raise unknown_route(provider, routes, what, ErrorCode.INVALID_CONFIG)
    return provider, model if isinstance(model, str) else None


def split_model(route_model: object) -> tuple[str, str]:
    """`"route:model"` as (route, model), split at the first colon (`local:qwen3:8b` works)."""
    route, _, model = route_model.partition(":") if isinstance(route_model, str) else ("", "", "")
    if not route or not model:
        raise _fail(
            f'model must be "route:model" (e.g. "deepseek:deepseek-v4-flash"), got {route_model!r}'
        )
    return route, model


def served_model(runtime: object, model: str | None) -> tuple[str, str]:
    """The (route, model) of `model` (`"route:model"`, None: `runtime.default_model`), with a
    route an `LlmRuntime` does not serve refused (`NO_ADAPTER`, listing the ones it does)."""
    wanted = model if model is not None else getattr(runtime, "default_model", None)
    if wanted is None:
        raise _fail(
            'no model: pass "route:model" (e.g. "deepseek:deepseek-v4-flash") or set '
            '[default] model = "route:model" in the config file (`modelwire config path`)'
        )
    route, name = split_model(wanted)
    if isinstance(runtime, LlmRuntime):
        routes = [info.id for info in runtime.list_providers()]
        if route not in routes:
            raise unknown_route(route, routes, f"model {wanted!r}", ErrorCode.NO_ADAPTER)
    return route, name


def default_log_url() -> str:
    """`$MODELWIRE_LOG` (a URL or a SQLite file path), else the user data dir's `sessions.db`."""
    named = os.environ.get(LOG_ENV)
    if named:
        return named if ":" in named.split("/", 1)[0] else f"sqlite:///{Path(named).resolve()}"
    from platformdirs import user_data_dir

    path = Path(user_data_dir("modelwire")) / "sessions.db"
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise HarnessError(
            f"cannot create the session log directory {path.parent} ({exc}): pass log=URL",
            ErrorCode.LOG_UNAVAILABLE,
        ) from exc
    return f"sqlite:///{path}"


class LazyLog(SessionLog):
    """The log at `url`, opened on first use (by the loop that uses it) and closed with it."""

    def __init__(self, url: str) -> None:
        super().__init__()
        self.url = url
        self._inner: SessionLog | None = None
        self._opening: asyncio.Future[SessionLog] | None = None

    def describe(self) -> str:
        inner = self._inner
        return inner.describe() if inner is not None else f"log {redact_url(self.url)}"

    async def _log(self) -> SessionLog:
        if self._inner is not None:
            return self._inner
        if self._opening is None:
            self._opening = asyncio.ensure_future(open_log(self.url))
        try:
            inner = await asyncio.shield(self._opening)
        except BaseException:
            if self._opening.done():
                self._opening = None  # a failed open is tried again next time
            raise
        if self._inner is None:
            self._inner = inner
            if on_sync_loop():
                on_bridge_exit(self.close)
        return inner

    async def _store(
        self, session_id: str, rows: Sequence[Row], *, barrier: bool, expect_seq: int | None = None
    ) -> int:
        inner = await self._log()
        return await inner._store(session_id, rows, barrier=barrier, expect_seq=expect_seq)

    def _chunk_writer(self, session_id: str, turn: int, step: int, attempt: int) -> ChunkWriter:
        inner = self._inner  # opened by the turn's first append: its writer appends at once
        if inner is None:
            return super()._chunk_writer(session_id, turn, step, attempt)
        return inner.chunk_writer(session_id, turn, step, attempt)

    async def _flush(self) -> None:
        await (await self._log())._flush()

    async def _load(self, session_id: str, from_seq: int, to_seq: int | None) -> list[StoredRow]:
        return await (await self._log())._load(session_id, from_seq, to_seq)

    async def _load_latest(self, session_id: str, type: str) -> StoredRow | None:
        return await (await self._log())._load_latest(session_id, type)

    async def _exists(self, session_id: str) -> bool:
        return await (await self._log())._exists(session_id)

    async def _list_sessions(self) -> list[SessionInfo]:
        return await (await self._log())._list_sessions()

    async def _close(self) -> None:
        if self._inner is not None:
            await self._inner.close()

    async def _delete(self, session_id: str) -> int:
        return await (await self._log()).delete(session_id)

    # leases and their fences live on the opened log (its appends check them)
    async def acquire_lease(self, session_id: str, owner: str, ttl_ms: float) -> Lease:
        return await (await self._log()).acquire_lease(session_id, owner, ttl_ms)

    async def renew_lease(self, lease: Lease, ttl_ms: float) -> Lease:
        return await (await self._log()).renew_lease(lease, ttl_ms)

    async def release_lease(self, lease: Lease) -> None:
        await (await self._log()).release_lease(lease)

    async def hold(self, lease: Lease) -> None:
        await (await self._log()).hold(lease)

    def fence(self, session_id: str) -> int | None:
        return None if self._inner is None else self._inner.fence(session_id)

    def unhold(self, lease: Lease) -> None:
        if self._inner is not None:
            self._inner.unhold(lease)

    async def _lease_txn(
        self, session_id: str, decide: Decision
    ) -> tuple[LeaseRow | None, LeaseRow | None]:
        return await (await self._log())._lease_txn(session_id, decide)

    async def _lease_rows(self) -> list[LeaseRow]:
        return await (await self._log())._lease_rows()
