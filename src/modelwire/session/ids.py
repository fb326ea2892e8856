"""Session ids: the documented alphabet and length, checked at the log's API edge.

A session id is 1 to `MAX_SESSION_ID_LENGTH` characters, each printable as Python's
`str.isprintable()` defines it: letters, marks, numbers, punctuation, symbols and the ASCII space.
Refused: control characters (NUL, CR, LF, TAB, DEL, C1), lone surrogates (which no storage can
encode as UTF-8), format characters, private-use and unassigned code points, and separators other
than the space. Checking here means no backend ever sees an id it cannot store, so one caller's
bad id can never fail the group commit another caller's events share.
"""

from __future__ import annotations

import unicodedata
from typing import Final

from ..errors import ErrorCode, HarnessError

__all__ = ["MAX_SESSION_ID_LENGTH", "check_session_id", "session_id_problem"]

MAX_SESSION_ID_LENGTH: Final = 256
"""The longest session id, in characters."""

_QUOTE_UP_TO: Final = 64
"""Ids up to this length are quoted (ASCII-escaped) in messages; longer ones are not."""


def session_id_problem(session_id: object) -> str | None:
    """Why `session_id` is not a valid session id (never quoting a long id), or None."""
    if not isinstance(session_id, str):
        return f"must be a string, not {type(session_id).__name__}"
    if not session_id:
        return "must not be empty"
    if len(session_id) > MAX_SESSION_ID_LENGTH:
        return f"is {len(session_id)} characters long (at most {MAX_SESSION_ID_LENGTH})"
    if session_id.isprintable():
        return None
    for position, char in enumerate(session_id):
        if not char.isprintable():
            category = unicodedata.category(char)
            what = {
                "Cc": "a control character",
                "Cs": "a lone surrogate",
                "Cf": "a format character",
                "Co": "a private-use character",
                "Cn": "an unassigned code point",
            }.get(category, "a separator other than the space")
            return f"contains {what} (U+{ord(char):04X}) at position {position}"
    return None  # pragma: no cover - isprintable() was False, so a character was found


def check_session_id(session_id: object) -> str:
    """`session_id` when valid, else `HarnessError` `INVALID_SESSION_ID` naming the problem."""
    if (
        isinstance(session_id, str)
        and 0 < len(session_id) <= MAX_SESSION_ID_LENGTH
        and session_id.isprintable()
    ):
        return session_id
    problem = session_id_problem(session_id)
    assert problem is not None
    shown = ""
    if isinstance(session_id, str) and 0 < len(session_id) <= _QUOTE_UP_TO:
        shown = " " + ascii(session_id)
    raise HarnessError(f"session id{shown} {problem}", ErrorCode.INVALID_SESSION_ID)
