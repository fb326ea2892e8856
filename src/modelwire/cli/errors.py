"""How CLI commands fail: one line on stderr and a stable exit code, tracebacks only with --debug.

Exit codes (the same for every command; `modelwire --help` lists them):

- 0: success (for `chat`: an answer, also one cut off at the output-token limit);
- 1: the provider or the turn failed (an HTTP error, a refused request or key, a model the
  provider says does not exist — `MODEL_NOT_FOUND` —, a failed tool loop), or an unexpected error;
- 2: usage error, found before anything was sent: bad arguments or options, a missing or
  malformed config file, an unknown route, model (not in the route's list) or session, a missing
  credential, a log URL or directory that cannot be used (missing, read-only), an empty prompt;
- 130: cancelled: Ctrl-C, or the reader of stdout went away (`modelwire chat … | head -1`).

With `--json` on the command line, a failure that ends the command also prints one JSON object on
stdout, `{"error": {"code": …, "message": …}, "exit_code": …}` (the `error:` line still goes to
stderr), so a script reading stdout never gets nothing: `code` is the failure's stable code
(`INVALID_ARGS` for a usage error that has none of its own).
"""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Callable, Coroutine
from typing import Final, NoReturn

__all__ = [
    "BAD_INPUT_CODES",
    "EXIT_BAD_INPUT",
    "EXIT_FAILURE",
    "EXIT_INTERRUPTED",
    "CliError",
    "exit_error",
    "fail",
    "json_errors",
    "os_error_text",
    "quiet_stdout",
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
        "INVALID_OPTION",
        "UNSUPPORTED_OPTION",
        "MISSING_CREDENTIAL",
        "INVALID_CREDENTIAL",
        "SESSION_NOT_FOUND",
        "INVALID_SESSION_ID",
        "NOTHING_TO_RESUME",
        "UNKNOWN_CALL",
        "ALREADY_DECIDED",
        "APPROVAL_PENDING",
        "LOG_UNAVAILABLE",
        "LOG_CORRUPT",
        "INVALID_REPLAY_FILE",
        "UNSUPPORTED_REASONING_EFFORT",
    }
)
"""Harness error codes that mean "the user's input is wrong", found before a request was sent
(exit code 2, no traceback); a turn that fails with one of them (e.g. `-o reasoning_effort=` a
model does not offer) exits 2 too. A provider's own verdict (`MODEL_NOT_FOUND`, `AUTH`) is 1."""


class CliError(Exception):
    """A failure the user can fix: printed as one `error: ...` line, exit code `exit_code`;
    `code` is its stable code for `--json` (None: `INVALID_ARGS`)."""

    def __init__(
        self, message: str, *, exit_code: int = EXIT_BAD_INPUT, code: str | None = None
    ) -> None:
        super().__init__(message)
        self.message = message
        self.exit_code = exit_code
        self.code = code


def fail(message: str, *, exit_code: int = EXIT_BAD_INPUT, code: str | None = None) -> NoReturn:
    """Raise a `CliError` (shorthand for commands)."""
    raise CliError(message, exit_code=exit_code, code=code)


_JSON_ERRORS: list[bool] = [False]


def json_errors(enabled: bool) -> None:
    """Also print a failure as a JSON object on stdout (the command line asked for `--json`)."""
    _JSON_ERRORS[0] = enabled


def _one_line(text: str) -> str:
    return " ".join(text.split())


def exit_error(message: str, code: int, error_code: str | None = None) -> NoReturn:
    """Print `message` as one `error:` line (and, with `--json`, the JSON object) and exit."""
    line = _one_line(message)
    try:
        if _JSON_ERRORS[0]:
            import json

            error = {"code": error_code or "INVALID_ARGS", "message": line}
            sys.stdout.write(json.dumps({"error": error, "exit_code": code}) + "\n")
            sys.stdout.flush()
        sys.stderr.write(f"error: {line}\n")
        sys.stderr.flush()
    except OSError:  # stderr itself is gone: the exit code is all that is left
        pass
    raise SystemExit(code)


def quiet_stdout() -> None:
    """Point file descriptor 1 at /dev/null after a broken pipe, so that the interpreter's final
    flush of `sys.stdout` cannot print "Exception ignored … BrokenPipeError" on the way out."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):  # no usable stdout at all: nothing to protect
        pass


def os_error_text(err: OSError) -> str:
    """`filename (strerror)` for an `OSError` (callers that write through a temporary file catch
    the error themselves and name the target instead, never the temporary name)."""
    reason = err.strerror or type(err).__name__
    return f"{err.filename} ({reason})" if err.filename else reason


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
    except BrokenPipeError:
        quiet_stdout()
        raise SystemExit(EXIT_INTERRUPTED) from None
    except CliError as err:
        if debug:
            raise
        exit_error(err.message, err.exit_code, err.code)
    except HarnessError as err:
        if debug:
            raise
        code_text = str(err.code)
        exit_code = EXIT_BAD_INPUT if code_text in BAD_INPUT_CODES else EXIT_FAILURE
        exit_error(f"{err} [{code_text}]", exit_code, code_text)
    except (SystemExit, asyncio.CancelledError):
        raise
    except OSError as err:
        if debug:
            raise
        if err.filename is None:
            exit_error(
                f"{type(err).__name__}: {err} (rerun with --debug for the traceback)", 1, "UNKNOWN"
            )
        exit_error(f"cannot use {os_error_text(err)}", EXIT_BAD_INPUT)
    except Exception as err:  # the last line of defence: one line unless --debug
        if debug:
            raise
        text = f"{type(err).__name__}: {err} (rerun with --debug for the traceback)"
        exit_error(text, EXIT_FAILURE, "UNKNOWN")
    raise SystemExit(code)
