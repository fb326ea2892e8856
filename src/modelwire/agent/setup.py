"""One-line setup: `open_runtime(config=None)`, the default session log, and a log opened lazily.

`open_runtime` registers, on a fresh `LlmRuntime`, every route a user has without writing code:

- the routes of the config file's `[providers.<route>]` sections (`ProvidersAdapter`);
- every provider of the installed model catalog (keys read from the environment on each call,
  e.g. `OPENAI_API_KEY`; a missing one is `MISSING_CREDENTIAL` naming the variable);
- the built-in `deepseek` route (`DeepSeekAdapter`, settings from the file's `[deepseek]` section,
  key `$DEEPSEEK_API_KEY`), unless the file declares its own `deepseek` provider.

The config file is the one the CLI reads (`config=` a path, else `$MODELWIRE_CONFIG`, else
`config.toml` in the user config dir when it exists), or `config=` a mapping of the same keys
(`default`, `deepseek`, `providers`); a bad file or key is `INVALID_CONFIG` naming it.

The default log is `$MODELWIRE_LOG`, else `sessions.db` (SQLite) in the user data dir, as for the
CLI. `LazyLog` opens a log URL on first use in the loop that uses it: `Agent.from_model` is
synchronous, and its log belongs to the loop that runs its turns (the sync calls' loop for
`run_sync`).
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Final, TypeAlias

from ..errors import ErrorCode, HarnessError
from ..runtime import LlmRuntime
from ..runtime.sync import on_bridge_exit, on_sync_loop
from ..session import open_log
from ..session.lease import Decision, Lease, LeaseRow
from ..session.log import ChunkWriter, Row, SessionInfo, SessionLog, StoredRow
from ..session.urls import redact_url

__all__ = [
    "BUILTIN_ROUTE",
    "CONFIG_ENV",
    "LOG_ENV",
    "ConfigSource",
    "LazyLog",
    "default_log_url",
    "load_settings",
    "open_runtime",
    "split_model",
]

ConfigSource: TypeAlias = str | os.PathLike[str] | Mapping[str, object] | None
"""Where `open_runtime` reads its settings: a file path, a parsed mapping, or None (the default)."""

CONFIG_ENV: Final = "MODELWIRE_CONFIG"
LOG_ENV: Final = "MODELWIRE_LOG"
BUILTIN_ROUTE: Final = "deepseek"
_SECTIONS: Final = ("default", "deepseek", "providers")


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
    catalog's providers (module docstring). `env` replaces the process environment for keys."""
    from ..adapters.deepseek import DeepSeekAdapter
    from ..adapters.providers import ProvidersAdapter
    from ..adapters.providers.catalog import load_catalog

    settings, where = load_settings(config)
    configured = settings.get("providers")
    profiles: dict[str, object] = dict(configured) if isinstance(configured, Mapping) else {}
    for provider in load_catalog().providers:
        if provider != BUILTIN_ROUTE:
            profiles.setdefault(provider, {})
    runtime = LlmRuntime()
    try:
        ProvidersAdapter.from_config({"providers": profiles}, env=env).register(runtime)
        if BUILTIN_ROUTE not in profiles:
            section = settings.get(BUILTIN_ROUTE)
            deepseek = DeepSeekAdapter.from_config(
                dict(section) if isinstance(section, Mapping) else {}, env=env
            )
            runtime.register_adapter([BUILTIN_ROUTE], deepseek)
    except HarnessError as exc:
        raise HarnessError(f"{where}: {exc.message}", exc.code, cause=exc) from exc
    return runtime


def split_model(route_model: object) -> tuple[str, str]:
    """`"route:model"` as (route, model), split at the first colon (`local:qwen3:8b` works)."""
    route, _, model = route_model.partition(":") if isinstance(route_model, str) else ("", "", "")
    if not route or not model:
        raise _fail(
            f'model must be "route:model" (e.g. "deepseek:deepseek-v4-flash"), got {route_model!r}'
        )
    return route, model


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
