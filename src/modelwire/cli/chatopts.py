"""What `modelwire chat` reads from its command line and stdin: the prompt, `-o`, `--tool`
(`-m ROUTE:MODEL` is `RouteSet.parse`'s).

The prompt is the PROMPT argument, the whole of stdin when stdin is not a terminal, or both: then
the argument comes first and stdin after it, separated by a blank line
(`git diff | modelwire chat "Review this"` sends the instruction, then the diff). A prompt that is
empty or only whitespace is refused before anything else happens.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from typing import BinaryIO, Final

from .errors import fail

__all__ = [
    "OPTION_KEYS",
    "CallOptions",
    "combine_prompt",
    "parse_options",
    "read_stdin_prompt",
]

OPTION_KEYS: Final = ("temperature", "max_tokens", "reasoning_effort")
"""The `-o` keys supported now; anything else is refused (provider options come later)."""

_ALIASES: Final = {"max-tokens": "max_tokens", "reasoning-effort": "reasoning_effort"}


@dataclass(frozen=True, slots=True)
class CallOptions:
    """The per-call options given with `-o key=value` (None: the route's default)."""

    temperature: float | None = None
    max_tokens: int | None = None
    reasoning_effort: str | None = None


def parse_options(pairs: Iterable[str]) -> CallOptions:
    """`-o key=value` pairs as `CallOptions`; a malformed pair or unknown key is a `CliError`."""
    values: dict[str, object] = {}
    for pair in pairs:
        key, sep, raw = pair.partition("=")
        key = _ALIASES.get(key.strip(), key.strip())
        if not sep or not key:
            fail(f"-o {pair!r}: expected KEY=VALUE (keys: {', '.join(OPTION_KEYS)})")
        if key not in OPTION_KEYS:
            fail(
                f"-o {key}: provider options are not supported yet; the supported keys are "
                f"{', '.join(OPTION_KEYS)}"
            )
        values[key] = _value(key, raw.strip())
    temperature = values.get("temperature")
    max_tokens = values.get("max_tokens")
    effort = values.get("reasoning_effort")
    return CallOptions(
        temperature=temperature if isinstance(temperature, float) else None,
        max_tokens=max_tokens if isinstance(max_tokens, int) else None,
        reasoning_effort=effort if isinstance(effort, str) else None,
    )


def _value(key: str, raw: str) -> object:
    if key == "temperature":
        try:
            number = float(raw)
        except ValueError:
            number = math.nan
        if not math.isfinite(number) or number < 0:
            fail(f"-o temperature={raw!r}: expected a number >= 0 (e.g. 0.2)")
        return number
    if key == "max_tokens":
        if not (raw.isascii() and raw.isdigit()) or int(raw) <= 0:  # "²".isdigit() is True
            fail(f"-o max_tokens={raw!r}: expected a positive whole number (e.g. 1024)")
        return int(raw)
    if not raw or not raw.isprintable() or not _is_text(raw):
        fail(f"-o reasoning_effort={raw!r}: expected a level such as low, medium or high")
    return raw


def _is_text(raw: str) -> bool:
    """False for text no request can carry: a lone surrogate (an argument's undecodable byte)."""
    try:
        raw.encode()
    except UnicodeEncodeError:
        return False
    return True


def read_stdin_prompt(stream: BinaryIO | None = None) -> str | None:
    """The whole of stdin when it is not a terminal (None for a terminal or no stdin)."""
    if stream is None:
        if sys.stdin is None or sys.stdin.isatty():
            return None
        stream = sys.stdin.buffer
    data = stream.read()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        fail(f"stdin is not UTF-8 text (byte {err.start}): pipe text, not a binary file")


def combine_prompt(argument: str | None, piped: str | None) -> str:
    """The argument, then stdin after a blank line; a blank result is a `CliError`."""
    parts = [p for p in (argument, piped.rstrip("\n") if piped is not None else None) if p]
    text = "\n\n".join(parts)
    if not text.strip():
        where = "the prompt argument" if argument is not None else "stdin"
        fail(
            f"empty prompt ({where} holds no text): pass PROMPT, pipe text on stdin, or run "
            "`modelwire chat` on a terminal for an interactive session"
        )
    return text
