"""Fixtures of the agent-loop tests (the helpers live in `agent_helpers.py`)."""

from __future__ import annotations

from agent_helpers import log, rig, sid

__all__ = ["log", "rig", "sid"]
