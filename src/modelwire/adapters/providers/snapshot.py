"""Immutable snapshots of the resolved profiles, and the registration facts derived from them."""

from __future__ import annotations

from collections.abc import Mapping

import msgspec

from ...policy import policy_key
from ...vocab import ConfigurableProvider
from .catalog import load_catalog
from .config import ResolvedProfile

__all__ = ["SETTINGS_NS", "Snapshot", "directory_entries", "registration_facts"]

SETTINGS_NS = "providers"
"""The settings namespace whose `providers` dict configures this adapter."""


class Snapshot(msgspec.Struct, frozen=True):
    """One published configuration: the resolved profile of every route.

    A request captures the adapter's current snapshot before its first await and uses only it,
    so a config update never changes a request in flight.
    """

    profiles: Mapping[str, ResolvedProfile]

    @property
    def routes(self) -> list[str]:
        """The routes of this snapshot, sorted."""
        return sorted(self.profiles)

    @property
    def config_order(self) -> list[str]:
        """The routes in the order the configuration wrote them (the registration order)."""
        return list(self.profiles)


def registration_facts(snapshot: Snapshot) -> tuple[tuple[str, str, str], ...]:
    """(route, display name, retry-policy key) per route, sorted by route; equal facts need no
    re-registration (reordering routes is not a change)."""
    return tuple(
        (route, p.display_name, policy_key(p.retry_policy))
        for route, p in sorted(snapshot.profiles.items())
    )


def directory_entries(snapshot: Snapshot) -> list[ConfigurableProvider]:
    """Every installed catalog provider plus every configured route (`declared` = the catalog
    ships nothing under the key), each pointing at its settings path."""
    catalog = load_catalog().providers
    names = {pid: p.name for pid, p in catalog.items()}
    for route, profile in snapshot.profiles.items():
        names[route] = profile.display_name
    return [
        ConfigurableProvider(
            provider=pid,
            display_name=name,
            settings_ns=SETTINGS_NS,
            settings_path=("providers", pid),
            declared=pid not in catalog,
        )
        for pid, name in sorted(names.items())
    ]
