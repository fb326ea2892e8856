"""The failure code each category of the collections' neutral error form means."""

from __future__ import annotations

CATEGORY_CODES = {
    "rate_limit": "RATE_LIMIT",
    "quota": "QUOTA",
    "context_length": "CONTEXT_WINDOW_EXCEEDED",
    "auth": "AUTH",
    "invalid_request": "INVALID_REQUEST",
    "server": "SERVER",
    "overloaded": "SERVER",
    "not_found": "MODEL_NOT_FOUND",
}
"""`expected.category` → the code of the code table (`overloaded` is a SERVER failure)."""
