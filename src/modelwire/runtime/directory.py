"""The configurable-provider directory and the model-discovery offers (spec/core.md §6.5–6.6).

The directory lists providers a settings surface may offer (live when a route is registered,
dormant otherwise); discovery interrogates a draft endpoint for model candidates and never touches
stored settings or credentials.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence

import msgspec

from ..errors import ErrorCode, LlmError
from ..vocab import ConfigurableProvider, DiscoveredModel, ModelDiscoveryRequest
from .registry import RegistrationHandle
from .scope import Scope

__all__ = ["DirectoryRegistration", "Discover", "DiscoveryRegistry", "ProviderDirectory"]

Discover = Callable[[ModelDiscoveryRequest], Awaitable[Sequence[DiscoveredModel]]]
"""Interrogates one draft endpoint and returns the models it reports."""


class DirectoryRegistration(RegistrationHandle):
    """The handle of one directory declaration: call to withdraw, `.replace([...])` to swap."""

    __slots__ = ("_directory", "_held")

    def __init__(self, directory: ProviderDirectory, scope: Scope | None) -> None:
        super().__init__(scope)
        self._directory = directory
        self._held: tuple[str, ...] = ()

    @property
    def providers(self) -> tuple[str, ...]:
        """The provider ids this declaration holds now."""
        return self._held

    def replace(self, entries: Sequence[ConfigurableProvider]) -> None:
        """Validate the whole set (own entries count as available), then swap it in at once.

        An empty list is legal; a refused set leaves the held entries exactly as they were.
        Raises `REGISTRATION_DISPOSED` after disposal.
        """
        if self._disposed:
            raise LlmError(
                "this configurable-provider registration was disposed",
                ErrorCode.REGISTRATION_DISPOSED,
            )
        directory = self._directory
        directory.commit(self, directory.validate(entries, self))

    def _release(self) -> None:
        self._directory.release(self)


class ProviderDirectory:
    """Ordered `provider -> ConfigurableProvider` map with all-or-nothing declarations."""

    __slots__ = ("_owners", "_publish", "entries")

    def __init__(self, publish: Callable[[], None]) -> None:
        self.entries: dict[str, ConfigurableProvider] = {}
        self._owners: dict[str, DirectoryRegistration] = {}
        self._publish = publish

    def register(
        self, entries: Sequence[ConfigurableProvider], scope: Scope | None
    ) -> DirectoryRegistration:
        """Validate and commit a first declaration (it must name at least one provider)."""
        if scope is not None:
            scope.ensure_open()
        if len(entries) == 0:
            raise LlmError(
                "a configurable-provider registration must declare at least one provider",
                ErrorCode.INVALID_DIRECTORY,
            )
        handle = DirectoryRegistration(self, scope)
        candidates = self.validate(entries, handle)
        if scope is not None:
            scope.add(handle)
        self.commit(handle, candidates)
        return handle

    def validate(
        self, entries: Sequence[ConfigurableProvider], owner: DirectoryRegistration
    ) -> list[ConfigurableProvider]:
        """Check a candidate set (R-DIR-2) and return detached copies; writes nothing."""
        seen: set[str] = set()
        out: list[ConfigurableProvider] = []
        for i, entry in enumerate(entries):
            where = f"configurable provider [{i}]"
            for field in ("provider", "display_name", "settings_ns"):
                value: object = getattr(entry, field, None)
                if not isinstance(value, str) or not value:
                    raise LlmError(
                        f"{where} needs a non-empty provider, display_name and settings_ns "
                        f"({field} is {value!r})",
                        ErrorCode.INVALID_DIRECTORY,
                    )
            raw_path: object = entry.settings_path
            path = tuple(raw_path) if isinstance(raw_path, (list, tuple)) else (None,)
            for segment in path:
                if not isinstance(segment, str) or not segment:
                    raise LlmError(
                        f'{where} ("{entry.provider}") has an empty settings_path segment',
                        ErrorCode.INVALID_DIRECTORY,
                    )
            holder = self._owners.get(entry.provider)
            if entry.provider in seen or (holder is not None and holder is not owner):
                raise LlmError(
                    f'configurable provider "{entry.provider}" is already declared',
                    ErrorCode.DUPLICATE_DIRECTORY,
                )
            seen.add(entry.provider)
            out.append(msgspec.structs.replace(entry, settings_path=path))
        return out

    def commit(self, owner: DirectoryRegistration, candidates: list[ConfigurableProvider]) -> None:
        """Swap `owner`'s entries for `candidates` (moved to the end), then publish once."""
        self._drop(owner)
        for entry in candidates:
            self.entries[entry.provider] = entry
            self._owners[entry.provider] = owner
        owner._held = tuple(e.provider for e in candidates)
        self._publish()

    def release(self, owner: DirectoryRegistration) -> None:
        """Withdraw every entry `owner` holds and publish."""
        self._drop(owner)
        owner._held = ()
        self._publish()

    def _drop(self, owner: DirectoryRegistration) -> None:
        for provider in owner._held:
            if self._owners.get(provider) is owner:
                del self._owners[provider]
                del self.entries[provider]


class DiscoveryRegistry:
    """`settings_ns -> discover` offers; registering or removing one publishes nothing."""

    __slots__ = ("offers",)

    def __init__(self) -> None:
        self.offers: dict[str, Discover] = {}

    def register(self, settings_ns: str, discover: Discover) -> Callable[[], None]:
        """Offer discovery for a namespace; returns the idempotent remover."""
        if not isinstance(settings_ns, str) or not settings_ns:
            raise LlmError(
                "model discovery needs a non-empty settings namespace", ErrorCode.INVALID_DISCOVERY
            )
        if settings_ns in self.offers:
            raise LlmError(
                f'model discovery for "{settings_ns}" is already registered',
                ErrorCode.DUPLICATE_DISCOVERY,
            )
        self.offers[settings_ns] = discover

        def remove() -> None:
            if self.offers.get(settings_ns) is discover:
                del self.offers[settings_ns]

        return remove

    async def discover(
        self, settings_ns: str, request: ModelDiscoveryRequest
    ) -> list[DiscoveredModel]:
        """Ask the namespace's offer about a draft endpoint; normalize what it reports."""
        discover = self.offers.get(settings_ns)
        if discover is None:
            raise LlmError(
                f'no model discovery is registered for "{settings_ns}"', ErrorCode.NO_DISCOVERY
            )
        if not request.provider and not request.base_url:
            raise LlmError(
                f'model discovery for "{settings_ns}" needs a provider route or a base_url',
                ErrorCode.INVALID_DISCOVERY,
            )
        reported = await discover(request)
        seen: set[str] = set()
        out: list[DiscoveredModel] = []
        for entry in reported:
            model_id: object = getattr(entry, "id", None)
            if not isinstance(model_id, str) or not model_id or model_id in seen:
                continue
            seen.add(model_id)
            out.append(
                DiscoveredModel(
                    id=model_id,
                    name=getattr(entry, "name", None),
                    context_window=getattr(entry, "context_window", None),
                    max_tokens=getattr(entry, "max_tokens", None),
                )
            )
        return out
