"""The page's static files, shipped inside the package (`modelwire/ui/static/`), read once.

No CDN and no build step: plain HTML, CSS and ES-module JavaScript, served from memory with a
fixed content type. Only the files found in the package are served; any other name is a 404.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import resources
from typing import Final

__all__ = ["Asset", "load_assets"]

_TYPES: Final = {
    ".html": "text/html; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".svg": "image/svg+xml",
    ".ico": "image/x-icon",
}


@dataclass(frozen=True, slots=True)
class Asset:
    """One static file: its bytes and content type."""

    body: bytes
    content_type: str


def load_assets() -> dict[str, Asset]:
    """Every file of `modelwire/ui/static` by name (works from a wheel or a zip too)."""
    folder = resources.files("modelwire.ui").joinpath("static")
    assets: dict[str, Asset] = {}
    for entry in folder.iterdir():
        name = entry.name
        suffix = name[name.rfind(".") :] if "." in name else ""
        if entry.is_file() and suffix in _TYPES:
            assets[name] = Asset(entry.read_bytes(), _TYPES[suffix])
    return assets
