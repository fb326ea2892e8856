"""The adapter route registry and its registration handles (spec/core.md §6.2–6.4).

A route maps to at most one registration. Candidate route sets are validated as a whole before
anything is written (empty, duplicate or id-mismatched routes register nothing); a commit deletes
the routes the registration held, inserts the new set in candidate order (so `replace()` moves a
registration's routes to the end of the listing) and then publishes `llm/adapter-change` once.
"""

from __future__ import annotations

import difflib
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Sequence
from types import TracebackType
from typing import Final

from ..errors import ErrorCode, LlmError
from ..policy import AlwaysRetryPolicy, NormalRetryPolicy, RetryPolicy, resolve_retry_policy
from ..vocab import ProviderInfo
from .adapter import LlmAdapter
from .scope import Scope

__all__ = [
    "REGISTRATION_DISPOSED",
    "AdapterRegistry",
    "Registration",
    "RegistrationHandle",
    "Route",
    "unknown_route_text",
]

REGISTRATION_DISPOSED: Final = ErrorCode.REGISTRATION_DISPOSED
"""The code `replace()` raises on a handle that was already disposed."""


def unknown_route_text(route: str, routes: Iterable[str]) -> str:
    """`unknown route 'locl' (did you mean 'local'? known routes: deepseek, local)`: the one
    wording every surface uses for a route nobody serves (at most 12 names, then a count)."""
    known = sorted(routes)
    close = difflib.get_close_matches(route, known, n=1)
    hint = f"did you mean {close[0]!r}? " if close else ""
    shown = ", ".join(known[:12]) + (f", … ({len(known)} in all)" if len(known) > 12 else "")
    return f"unknown route {route!r} ({hint}known routes: {shown or 'none'})"


class RegistrationHandle(ABC):
    """Base of the registry handles: calling it disposes (idempotently); also a context manager."""

    __slots__ = ("_disposed", "_scope")

    def __init__(self, scope: Scope | None) -> None:
        self._disposed = False
        self._scope = scope

    @property
    def disposed(self) -> bool:
        """True once the handle was called (directly or by its owning scope)."""
        return self._disposed

    def __call__(self) -> None:
        if self._disposed:
            return
        self._disposed = True
        scope = self._scope
        if scope is not None:
            self._scope = None
            scope.discard(self)
        self._release()

    @abstractmethod
    def _release(self) -> None:
        """Withdraw what the handle holds and publish the change (runs at most once)."""

    def __enter__(self) -> RegistrationHandle:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self()

    async def __aenter__(self) -> RegistrationHandle:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self()


class Route:
    """One served route: the adapter instance, its provider-info snapshot and its retry policy."""

    __slots__ = ("adapter", "info", "owner", "retry_policy")

    def __init__(
        self,
        adapter: LlmAdapter,
        info: ProviderInfo,
        retry_policy: RetryPolicy,
        owner: Registration,
    ) -> None:
        self.adapter: Final = adapter
        self.info: Final = info
        self.retry_policy: Final = retry_policy
        self.owner: Final = owner


class Registration(RegistrationHandle):
    """The handle of one `register_adapter` call: `reg()` disposes, `reg.replace([...])` swaps."""

    __slots__ = ("_held", "_registry", "adapter")

    def __init__(self, registry: AdapterRegistry, adapter: LlmAdapter, scope: Scope | None) -> None:
        super().__init__(scope)
        self._registry = registry
        self.adapter: Final = adapter
        self._held: tuple[str, ...] = ()

    @property
    def providers(self) -> tuple[str, ...]:
        """The routes this registration holds now, in commit order."""
        return self._held

    def replace(self, providers: Sequence[str]) -> None:
        """Validate the whole candidate set, then swap it in with one notification.

        An empty list is legal (a live registration holding no route). On any validation failure
        the previously held routes keep serving. Raises `REGISTRATION_DISPOSED` after disposal.
        """
        if self._disposed:
            raise LlmError(
                "a disposed adapter registration cannot replace its routes", REGISTRATION_DISPOSED
            )
        registry = self._registry
        registry.commit(self, registry.validate(providers, self.adapter, self))

    def _release(self) -> None:
        self._registry.release(self)


class AdapterRegistry:
    """Ordered `route -> Route` map with all-or-nothing validation and one event per commit."""

    __slots__ = ("_publish", "routes")

    def __init__(self, publish: Callable[[], None]) -> None:
        self.routes: dict[str, Route] = {}
        self._publish = publish

    def register(
        self,
        providers: Sequence[str],
        adapter: LlmAdapter,
        scope: Scope | None,
    ) -> Registration:
        """Validate and commit a new registration owned by `scope` (if given)."""
        if scope is not None:
            scope.ensure_open()
        if not isinstance(providers, str) and len(providers) == 0:
            raise LlmError(
                "an adapter must register at least one provider", ErrorCode.INVALID_ADAPTER
            )
        registration = Registration(self, adapter, scope)
        candidates = self.validate(providers, adapter, registration)
        if scope is not None:
            # Owned before the commit: if a listener then raises an INVARIANT error out of the
            # commit, the routes still have an owner that releases them (spec R-REG-7).
            scope.add(registration)
        self.commit(registration, candidates)
        return registration

    def validate(
        self,
        providers: Sequence[str],
        adapter: LlmAdapter,
        owner: Registration,
    ) -> list[Route]:
        """Check a candidate route set (R-REG-2 step 2) and build its routes; writes nothing."""
        if isinstance(providers, str):
            raise LlmError(
                f'providers must be a list of routes, got the string "{providers}"',
                ErrorCode.INVALID_ADAPTER,
            )
        seen: set[str] = set()
        out: list[Route] = []
        for route in providers:
            if not isinstance(route, str) or not route:
                raise LlmError(
                    f"an adapter provider route must be a non-empty string, got {route!r}",
                    ErrorCode.INVALID_ADAPTER,
                )
            held = self.routes.get(route)
            if route in seen or (held is not None and held.owner is not owner):
                raise LlmError(
                    f'provider "{route}" is already registered', ErrorCode.DUPLICATE_ADAPTER
                )
            seen.add(route)
            info = adapter.provider_info(route)
            info_id: object = getattr(info, "id", None)
            name: object = getattr(info, "name", None)
            if info_id != route or not isinstance(info_id, str):
                raise LlmError(
                    f'provider_info("{route}") returned id {info_id!r}; it must equal the route',
                    ErrorCode.INVALID_ADAPTER,
                )
            if not isinstance(name, str) or not name:
                raise LlmError(
                    f'provider_info("{route}") must return a non-empty string name, got {name!r}',
                    ErrorCode.INVALID_ADAPTER,
                )
            out.append(
                Route(adapter, ProviderInfo(route, name), _retry_policy_of(adapter, route), owner)
            )
        return out

    def commit(self, owner: Registration, candidates: list[Route]) -> None:
        """Swap `owner`'s held routes for `candidates` in one section, then publish once."""
        routes = self.routes
        for route in owner._held:
            held = routes.get(route)
            if held is not None and held.owner is owner:
                del routes[route]
        for candidate in candidates:
            routes[candidate.info.id] = candidate
        owner._held = tuple(c.info.id for c in candidates)
        self._publish()

    def release(self, owner: Registration) -> None:
        """Remove the routes `owner` still holds (never a route someone else took) and publish."""
        routes = self.routes
        for route in owner._held:
            held = routes.get(route)
            if held is not None and held.owner is owner:
                del routes[route]
        owner._held = ()
        self._publish()


def _retry_policy_of(adapter: LlmAdapter, route: str) -> RetryPolicy:
    policy = adapter.provider_retry_policy(route)
    if policy is None:
        return resolve_retry_policy(None, f'llm: provider "{route}" retry_policy')
    if not isinstance(policy, (NormalRetryPolicy, AlwaysRetryPolicy)):
        raise LlmError(
            f'provider_retry_policy("{route}") must return a resolved RetryPolicy or None, '
            f"got {type(policy).__name__}",
            ErrorCode.INVALID_ADAPTER,
        )
    return policy
