"""The multi-provider adapter: profiles, the installed catalog and three wire protocols.

`ProvidersAdapter.from_config({"providers": {route: profile}}, env=None)` validates every profile
at load; `adapter.register(runtime)` registers all routes at once; `adapter.update_config(cfg)`
swaps the published snapshot (re-registering only when routes or retry policies change).
"""

from __future__ import annotations

from .adapter import ProvidersAdapter
from .compat import PROTOCOLS
from .config import load_config_file

__all__ = [
    "PROTOCOLS",
    "ProvidersAdapter",
    "load_config_file",
    "supported_protocols",
]


def supported_protocols() -> tuple[str, ...]:
    """The protocols a profile may name, in order (the first is the default to preselect)."""
    return PROTOCOLS
