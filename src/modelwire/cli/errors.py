"""How CLI commands fail: one line on stderr and a stable exit code, tracebacks only with --debug.

Exit codes: 0 success; 1 an unexpected failure (or a turn that ended in a model error);
2 bad input (missing or malformed config, unknown route or model, unreachable log URL, missing
credential); 130 interrupted by Ctrl-C.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable, Coroutine
from typing import Final, NoReturn

__all__ = [
    "BAD_INPUT_CODES",
    "EXIT_BAD_INPUT",
    "EXIT_FAILURE",
    "EXIT_INTERRUPTED",
    "CliError",
    "fail",
    "run_async",
]

EXIT_FAILURE: Final = 1
EXIT_BAD_INPUT: Final = 2
EXIT_INTERRUPTED: Final = 130

BAD_INPUT_CODES: Final = frozenset(
    {
        "NO_ADAPTER",
        "UNKNOWN_MODEL",
        "INVALID_CONFIG",
        "INVALID_CATALOG",
        "INVALID_ARGS",
        "MISSING_CREDENTIAL",
        "INVALID_CREDENTIAL",
        "SESSION_NOT_FOUND",
        "LOG_UNAVAILABLE",
        "LOG_CORRUPT",
        "INVALID_REPLAY_FILE",
        "UNSUPPORTED_REASONING_EFFORT",
    }
)
"""Harness error codes that mean "the user's input is wrong" (exit code 2, no traceback)."""


class CliError(Exception):
    """A failure the user can fix: printed as one `error: ...` line, exit code `exit_code`."""

    def __init__(self, message: str, *, exit_code: int = EXIT_BAD_INPUT) -> None:
        super().__init__(message)
        self.message = message
        self.exit_code = exit_code


def fail(message: str, *, exit_code: int = EXIT_BAD_INPUT) -> NoReturn:
    """Raise a `CliError` (shorthand for commands)."""
    raise CliError(message, exit_code=exit_code)


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _exit(message: str, code: int) -> NoReturn:
    sys.stderr.write(f"error: {_one_line(message)}\n")
    sys.stderr.flush()
    raise SystemExit(code)


def run_async(main: Callable[[], Coroutine[object, object, int]], *, debug: bool) -> NoReturn:
    """Run a command's coroutine and exit with its code, mapping failures to one line each."""
    from ..errors import HarnessError

    async def command() -> int:
        try:
            return await main()
        finally:
            http = sys.modules.get("modelwire.wire.http")
            if http is not None:  # release the pooled HTTP sessions of this event loop
                await http.close_sessions()

    try:
        code = asyncio.run(command())
    except KeyboardInterrupt:
        sys.stderr.write("interrupted\n")
        raise SystemExit(EXIT_INTERRUPTED) from None
    except CliError as err:
        if debug:
            raise
        _exit(err.message, err.exit_code)
    except HarnessError as err:
        if debug:
            raise
        code_text = str(err.code)
        exit_code = EXIT_BAD_INPUT if code_text in BAD_INPUT_CODES else EXIT_FAILURE
        _exit(f"{err} [{code_text}]", exit_code)
    except (SystemExit, asyncio.CancelledError):
        raise
    except Exception as err:  # the last line of defence: one line unless --debug
        if debug:
            raise
        _exit(f"{type(err).__name__}: {err} (rerun with --debug for the traceback)", EXIT_FAILURE)
    raise SystemExit(code)
