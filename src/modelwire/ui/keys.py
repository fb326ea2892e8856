"""The typed application keys the inspector's handlers share."""

from __future__ import annotations

import asyncio

from aiohttp import web

from .assets import Asset
from .index import LogIndex

__all__ = ["ASSETS", "INDEX", "LOG_NAME", "POLL_INTERVAL", "STOPPING"]

INDEX = web.AppKey("modelwire_ui_index", LogIndex)
"""The cached projections of the served log."""

LOG_NAME = web.AppKey("modelwire_ui_log_name", str)
"""The log's credential-free description, shown on the page."""

ASSETS = web.AppKey("modelwire_ui_assets", dict[str, Asset])
"""The static files by name."""

POLL_INTERVAL = web.AppKey("modelwire_ui_poll_interval", float)
"""Seconds between two reads of the log by a live stream."""

STOPPING = web.AppKey("modelwire_ui_stopping", asyncio.Event)
"""Set when the application shuts down: live streams end."""
