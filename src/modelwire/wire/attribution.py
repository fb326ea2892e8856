"""Attribution: the public product identity every provider request carries as its User-Agent.

Only static product facts go here (no secrets, paths, session ids or per-user data). Attribution can
be replaced (white-label) but not suppressed: omitting the identity falls back to `APP_IDENTITY`.
"""

from __future__ import annotations

import functools
from importlib.metadata import PackageNotFoundError, version
from typing import Final

import msgspec

__all__ = ["APP_IDENTITY", "AppIdentity", "attribution_headers", "user_agent"]


class AppIdentity(msgspec.Struct, frozen=True, kw_only=True):
    """Public, static product facts: product name, version and project URL."""

    product: str
    version: str
    url: str


def _own_version() -> str:
    try:
        return version("modelwire")
    except PackageNotFoundError:  # running from a source tree that was never installed
        return "0+unknown"


APP_IDENTITY: Final = AppIdentity(
    product="modelwire",
    version=_own_version(),
    url="https://github.com/modelwire/modelwire",
)
"""modelwire's own identity; `version` is read from the installed package metadata."""


@functools.lru_cache(maxsize=16)
def user_agent(identity: AppIdentity = APP_IDENTITY) -> str:
    """The User-Agent value, `<product>/<version> (+<url>)` (one string per identity)."""
    return f"{identity.product}/{identity.version} (+{identity.url})"


def attribution_headers(identity: AppIdentity = APP_IDENTITY) -> dict[str, str]:
    """Exactly the attribution headers of one provider request: `{"User-Agent": user_agent(...)}`.

    A fresh dict each call, so callers may merge it into their own headers.
    """
    return {"User-Agent": user_agent(identity)}
