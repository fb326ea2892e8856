"""`modelwire serve`: an OpenAI- and Anthropic-compatible gateway in front of every route.

`create_app(config, log)` is the aiohttp application (`app.py`); `serve(...)` runs it until
SIGTERM (`run.py`). Each incoming protocol is translated into modelwire's vocabulary
(`chat_in`, `responses_in`, `messages_in`) and the chunk stream back into that protocol's wire
events (`chat_out`, `responses_out`, `messages_out`); every request is a turn in the log
(`record`), calls are retried and fall back as configured (`upstream`), and virtual keys with
their budgets and rate limits live in the log database (`keystore`, `limits`). Agents for web
frontends (`create_app(agents=...)`) stream their turns from the log as the AI SDK's UI message
stream or AG-UI, resumable at any seq in any process (`agents`, `uistream`, `agui`, `follow`).
"""

from __future__ import annotations

from .app import ADMIN_KEY_ENV, create_app

__all__ = ["ADMIN_KEY_ENV", "create_app"]
