"""Opening the session log for a command: URL resolution plus one-line errors for bad URLs."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from ..errors import HarnessError
from ..session import SessionLog, open_log, redact_url
from .config import resolve_log_url
from .errors import fail

__all__ = ["open_cli_log", "shown_url"]


def shown_url(url: str) -> str:
    """`url` as printed: unchanged (copy-pasteable) unless it carries credentials to hide
    (a password, a query string or a fragment; see `redact_url`)."""
    return redact_url(url)


@asynccontextmanager
async def open_cli_log(option: str | None) -> AsyncIterator[tuple[SessionLog, str]]:
    """Open the log named by `--log` (or its defaults); yields `(log, url)` and closes it after.

    An unreachable or unusable log is a `CliError` naming the URL (without its password).
    """
    url = resolve_log_url(option)
    try:
        log = await open_log(url)
    except (HarnessError, OSError) as err:
        fail(f"cannot open the session log {shown_url(url)}: {err}")
    except Exception as err:  # a driver error (e.g. connection refused): still bad input
        fail(f"cannot open the session log {shown_url(url)}: {err}")
    try:
        yield log, url
    finally:
        await log.close()
