"""`ReplayAdapter`: serves recorded model calls back, in order, per live session (D.4–D.6).

It answers any route and model without I/O or credentials. Each live `GenerateOptions.session_id`
(or the single anonymous key when unset) claims the next unbound script on its first call; its
cursor advances when `stream()` is *called*, not when iterated. Requests are not compared unless
`strict=True`. Register it as an adapter (`rt.register_adapter([...], adapter)` or
`adapter.register(rt)`) — raised failures then become in-band error finishes — or as a catch-all
`llm/stream` middleware (`rt.use(adapter.middleware)`), where they stay raised.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, assert_never

import msgspec

from ...errors import ErrorCode, HarnessError, LlmError
from ...policy import RetryPolicy
from ...runtime.adapter import LlmAdapter
from ...vocab import (
    BlockStart,
    GenerateOptions,
    ModelInfo,
    ProviderInfo,
    ResolvedModelInfo,
    StreamChunk,
    TextDelta,
)
from .catalog import ReplayCatalog, recorded_model_info
from .loading import EventReader, load_file_scripts, load_log_scripts, resolve_replay_config
from .placeholders import resolve_entry
from .script import ChunksEntry, HangEntry, ReplayCall, ReplayScript, ThrowEntry
from .strict import check_request

if TYPE_CHECKING:
    from ...runtime import LlmRuntime, Registration, Scope
    from ...runtime.middleware import CallNext

__all__ = ["ReplayAdapter"]


def _check_pace(pace_ms: object) -> int:
    if type(pace_ms) is not int or pace_ms < 0:
        raise HarnessError(
            f"replay: pace_ms must be a non-negative integer, got {pace_ms!r}",
            ErrorCode.INVALID_CONFIG,
        )
    return pace_ms


def _who(key: str | None) -> str:
    return "the anonymous session" if key is None else f"session {key!r}"


def _cancelled() -> bool:
    task = asyncio.current_task()
    return task is not None and task.cancelling() > 0


class _Cursor:
    __slots__ = ("script", "used")

    def __init__(self, script: ReplayScript) -> None:
        self.script = script
        self.used = 0


async def _raise(error: Exception) -> AsyncIterator[StreamChunk]:
    raise error
    yield  # pragma: no cover - makes this an async generator


class ReplayAdapter(LlmAdapter):
    """Replays recorded provider calls: one script per recorded session, one entry per call.

    Build it with `from_file`, `from_log` or `from_config`, or directly from `ReplayScript`s.
    `pace_ms` spaces chunk delivery (a non-negative int, default 0 = burst); `providers` is an
    optional explicit catalog (see `catalog.py`), otherwise model metadata is the recording's.
    """

    def __init__(
        self,
        scripts: Sequence[ReplayScript],
        *,
        strict: bool = False,
        pace_ms: int = 0,
        providers: Mapping[str, object] | None = None,
        sleep: Callable[[float], Awaitable[object]] = asyncio.sleep,
    ) -> None:
        self._pace = _check_pace(pace_ms) / 1000.0
        self._sleep = sleep  # injectable: tests pass a recording sleep, never wait in real time
        self._scripts = tuple(scripts)
        self._strict = bool(strict)
        self._catalog = ReplayCatalog(providers) if providers else None
        self._cursors: dict[str | None, _Cursor] = {}
        self._headers = tuple(h for s in self._scripts for h in s.headers)
        self._contexts = tuple(c for s in self._scripts for c in s.contexts)

    # ---- construction ------------------------------------------------------------------------

    @classmethod
    def from_file(
        cls,
        path: str | os.PathLike[str],
        *,
        strict: bool = False,
        override: str | os.PathLike[str] | None = None,
        children: Sequence[str | os.PathLike[str]] = (),
        pace_ms: int = 0,
        providers: Mapping[str, object] | None = None,
    ) -> ReplayAdapter:
        """Replay an export written by `export_session` (blocking read; errors at load).

        The sidecar `override` defaults to `<path>.override.json` and is ignored when absent;
        `children` are exports of sessions the recorded one spawned. A bad file, a call without a
        finish, or a sidecar naming a call that does not exist raises `INVALID_REPLAY_FILE`
        naming the file and the line or field.
        """
        scripts = load_file_scripts(path, override=override, children=children)
        return cls(scripts, strict=strict, pace_ms=pace_ms, providers=providers)

    @classmethod
    async def from_log(
        cls,
        log: EventReader,
        session_id: str,
        *,
        strict: bool = False,
        override: str | os.PathLike[str] | None = None,
        children: Sequence[str] = (),
        pace_ms: int = 0,
        providers: Mapping[str, object] | None = None,
    ) -> ReplayAdapter:
        """Replay `session_id` of a live log (children: session ids of the same log)."""
        scripts = await load_log_scripts(log, session_id, override=override, children=children)
        return cls(scripts, strict=strict, pace_ms=pace_ms, providers=providers)

    @classmethod
    def from_config(
        cls, config: Mapping[str, object] | None = None, *, env: Mapping[str, str] | None = None
    ) -> ReplayAdapter:
        """Build from a config section (`file`, `override_file`, `child_files`, `providers`,
        `pace_ms`, `strict`), falling back to `MODELWIRE_REPLAY_FILE`/`_OVERRIDE`/`_CHILD_FILES`.
        """
        resolved = resolve_replay_config(config, os.environ if env is None else env)
        pace = _check_pace(resolved.pace_ms)
        return cls.from_file(
            resolved.file,
            strict=resolved.strict,
            override=resolved.override_file,
            children=resolved.child_files,
            pace_ms=pace,
            providers=resolved.providers,
        )

    # ---- inspection and installation ---------------------------------------------------------

    @property
    def scripts(self) -> tuple[ReplayScript, ...]:
        """The loaded scripts: the primary first, then children in binding order."""
        return self._scripts

    def routes(self) -> tuple[str, ...]:
        """The catalog's routes, else every provider route the recording used, in order."""
        if self._catalog is not None:
            return self._catalog.routes
        return tuple(dict.fromkeys(h.config.provider for h in self._headers))

    def register(
        self,
        runtime: LlmRuntime,
        routes: Sequence[str] | None = None,
        *,
        scope: Scope | None = None,
    ) -> Registration:
        """Register on `routes` (default: `routes()`); `INVALID_CONFIG` when there are none."""
        chosen = tuple(routes) if routes is not None else self.routes()
        if not chosen:
            raise HarnessError(
                "replay: no provider route to register (the recording has no request/header; "
                "pass routes= or providers=)",
                ErrorCode.INVALID_CONFIG,
            )
        return runtime.register_adapter(chosen, self, scope=scope)

    def middleware(
        self, options: GenerateOptions, call_next: CallNext
    ) -> AsyncIterator[StreamChunk]:
        """A catch-all `llm/stream` middleware: every call is replayed, no adapter is consulted."""
        return self.stream(options)

    def assert_consumed(self) -> None:
        """Raise `REPLAY_UNCONSUMED` unless every script was bound and fully replayed."""
        problems: list[str] = []
        unbound = len(self._scripts) - len(self._cursors)
        if unbound > 0:
            problems.append(f"{unbound} recorded script(s) never bound to a live session")
        for key, cursor in self._cursors.items():
            total = len(cursor.script.calls)
            if cursor.used < total:
                problems.append(f"{_who(key)} consumed {cursor.used}/{total} recorded call(s)")
        if problems:
            raise HarnessError(
                f"replay: fixture not fully consumed — {'; '.join(problems)}; the scenario drove "
                "fewer model calls than recorded",
                ErrorCode.REPLAY_UNCONSUMED,
            )

    # ---- LlmAdapter --------------------------------------------------------------------------

    def provider_info(self, provider: str) -> ProviderInfo:
        """The catalog's display name for the route, else the route itself."""
        info = self._catalog.provider_info(provider) if self._catalog is not None else None
        return info or ProviderInfo(provider, provider)

    def provider_retry_policy(self, provider: str) -> RetryPolicy | None:
        """The catalog's retry policy for the route (None: the runtime's normal default)."""
        return self._catalog.retry_policy(provider) if self._catalog is not None else None

    async def list_models(self, provider: str) -> list[ModelInfo]:
        """The catalog's models for the route, else the models the recording used on it."""
        listed = self._catalog.list_models(provider) if self._catalog is not None else None
        if listed is not None:
            return listed
        models = dict.fromkeys(
            h.config.model for h in self._headers if h.config.provider == provider
        )
        return [ModelInfo(provider=provider, id=m, name=m) for m in models]

    async def resolve_model(self, provider: str, model: str) -> ResolvedModelInfo:
        """Catalog metadata, else what the recording implies (defaults, efforts, window)."""
        found = self._catalog.resolve(provider, model) if self._catalog is not None else None
        if found is None:
            found = recorded_model_info(self._headers, self._contexts, provider, model)
        return msgspec.structs.replace(found, wire="replay")  # the replay row of the contract

    def stream(self, options: GenerateOptions) -> AsyncIterator[StreamChunk]:
        """Bind the session (first-call order) and advance its cursor now; replay on iteration.

        Errors surface on iteration: `REPLAY_UNRECORDED_SESSION`, `REPLAY_EXHAUSTED` (naming the
        session and the call number), `REPLAY_MISMATCH` (strict mode, with a diff).
        """
        key = options.session_id
        cursor = self._cursors.get(key)
        if cursor is None:
            bound = len(self._cursors)
            if bound >= len(self._scripts):
                return _raise(
                    LlmError(
                        f"replay: a model call arrived from an unrecorded session "
                        f"(#{bound + 1}, {_who(key)}); the scenario recorded only "
                        f"{len(self._scripts)} session(s) — re-record it",
                        ErrorCode.REPLAY_UNRECORDED_SESSION,
                    )
                )
            cursor = self._cursors[key] = _Cursor(self._scripts[bound])
        cursor.used += 1
        number = cursor.used
        calls = cursor.script.calls
        if number > len(calls):
            return _raise(
                LlmError(
                    f"replay: script exhausted — {_who(key)} requested model call #{number} but "
                    f"its script ({cursor.script.source}) has only {len(calls)}; re-record the "
                    "scenario",
                    ErrorCode.REPLAY_EXHAUSTED,
                )
            )
        return self._play(calls[number - 1], options, f"model call #{number} of {_who(key)}")

    # ---- playback ----------------------------------------------------------------------------

    async def _play(
        self, call: ReplayCall, options: GenerateOptions, what: str
    ) -> AsyncIterator[StreamChunk]:
        if self._strict and call.request is not None:
            check_request(call.request, options, what=f"{what} ({call.label})")
        entry = resolve_entry(call.entry, options.messages) if call.templated else call.entry
        pace = self._pace
        match entry:
            case ChunksEntry() | ThrowEntry():
                for chunk in entry.chunks:
                    if _cancelled():
                        raise asyncio.CancelledError()
                    if pace:
                        await self._sleep(pace)
                    yield chunk
                if isinstance(entry, ThrowEntry):
                    if _cancelled():
                        raise asyncio.CancelledError()
                    raise LlmError.from_failure(entry.failure)
            case HangEntry():
                yield BlockStart(0, "text")
                yield TextDelta(0, "partial")
                if entry.ready_file is not None:
                    await asyncio.to_thread(Path(entry.ready_file).touch)
                if _cancelled():
                    raise asyncio.CancelledError()
                await asyncio.get_running_loop().create_future()  # held until cancelled
            case _:
                assert_never(entry)
