"""Environment references in the secret settings of an MCP server, and keeping them out of text.

The values of a server's `env` and `headers` are secrets. They may name environment variables
instead of holding the secret: `${NAME}` anywhere in a value is replaced by `$NAME` of the
process environment when the server starts (`"Bearer ${GITHUB_TOKEN}"`), so a config file needs
not hold the secret itself; `$$` is a literal `$`. A variable that is not set is
`MISSING_CREDENTIAL`, naming the server, the setting and the variable — never a value. Every text
modelwire builds from a failure passes `scrub`, which masks the resolved values.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Final

from ..errors import ErrorCode, HarnessError

__all__ = ["expand", "scrub"]

_REFERENCE: Final = re.compile(r"\$\$|\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
_MIN_MASKED: Final = 4
"""Shorter values are not masked (they would garble every message and hide nothing)."""


def expand(value: str, environ: Mapping[str, str], where: str) -> str:
    """`value` with its `${NAME}` references resolved from `environ`; `where` names the setting
    in the error (`MCP server 'github' header 'Authorization'`)."""
    if "$" not in value:
        return value

    def resolve(match: re.Match[str]) -> str:
        name = match.group(1)
        if name is None:
            return "$"
        found = environ.get(name)
        if found is None:
            raise HarnessError(
                f"{where} refers to ${{{name}}}, which is not set in the environment: export "
                f"{name}=... (or write the value itself; $$ is a literal $)",
                ErrorCode.MISSING_CREDENTIAL,
            )
        return found

    return _REFERENCE.sub(resolve, value)


def scrub(text: str, secrets: Iterable[str]) -> str:
    """`text` with every secret value in it replaced by `***` (longest first)."""
    for secret in sorted({s for s in secrets if len(s) >= _MIN_MASKED}, key=len, reverse=True):
        if secret in text:
            text = text.replace(secret, "***")
    return text
