"""How to reach an MCP server — a command over stdio, or a URL — checked when it is declared.

Pure data: nothing here starts anything or imports the SDK. `resolved()` resolves the
`${NAME}` references of the secret settings (`env`, `headers`: `_secrets.py`) when a server
starts; `target` is how messages name the server's transport (never a secret).
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import PurePath
from typing import Final, TypeAlias
from urllib.parse import urlsplit

from ..errors import ErrorCode, HarnessError
from ..wire.settings import DEFAULT_SETTINGS, TransportSettings
from ._secrets import expand

__all__ = ["Http", "Spec", "Stdio", "check_mapping", "invalid", "names"]

_NAME_CHARS: Final = re.compile(r"[^A-Za-z0-9_-]+")
_HEADER_NAME: Final = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")
_CONTROL: Final = re.compile(r"[\x00-\x1f\x7f]")


def invalid(message: str) -> HarnessError:
    """An `INVALID_CONFIG` error for a server declaration."""
    return HarnessError(message, ErrorCode.INVALID_CONFIG)


def names(value: object, what: str) -> tuple[str, ...]:
    """A list of strings (`args`, tool names): a bare string is refused, not split into letters."""
    if isinstance(value, str) or not isinstance(value, Sequence):
        raise invalid(f"{what} must be a list of strings, got {type(value).__name__}")
    out = tuple(value)
    for item in out:
        if not isinstance(item, str) or "\x00" in item:
            raise invalid(f"{what} must be a list of strings without NUL, got {item!r}")
    return out


def check_mapping(value: object, what: str, *, headers: bool) -> dict[str, str] | None:
    """`env` or `headers`: None or a mapping of names to string values (values never shown)."""
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise invalid(f"{what} must be a mapping of names to strings, got {type(value).__name__}")
    out: dict[str, str] = {}
    for key, item in value.items():
        ok = isinstance(key, str) and (
            _HEADER_NAME.fullmatch(key) if headers else key and "=" not in key and "\x00" not in key
        )
        if not ok:
            raise invalid(f"{what} has an invalid name {key!r}")
        if not isinstance(item, str) or (_CONTROL.search(item) if headers else "\x00" in item):
            kind = "a string without control characters" if headers else "a string without NUL"
            raise invalid(f"{what} {key!r} must be {kind}")
        out[key] = item
    return out


def _resolved(values: Mapping[str, str] | None, where: str) -> dict[str, str] | None:
    if values is None:
        return None
    environ = os.environ
    return {key: expand(value, environ, f"{where} {key!r}") for key, value in values.items()}


def _default_name(stem: str) -> str:
    return _NAME_CHARS.sub("-", stem).strip("-")[:32] or "mcp"


@dataclass(frozen=True, slots=True, repr=False)
class Stdio:
    """A server run as a child process, spoken to over its stdin and stdout."""

    command: str
    args: tuple[str, ...] = ()
    env: Mapping[str, str] | None = None
    cwd: str | None = None

    @classmethod
    def of(cls, command: object, args: object, env: object, cwd: object) -> Stdio:
        """The checked declaration (`INVALID_CONFIG` naming the field)."""
        if not isinstance(command, str) or not command.strip() or "\x00" in command:
            raise invalid(f"MCPServer.stdio command must be a non-empty string, got {command!r}")
        if cwd is not None and not isinstance(cwd, (str, os.PathLike)):
            raise invalid(f"MCPServer.stdio cwd must be a path, got {type(cwd).__name__}")
        return cls(
            command,
            names(args, "MCPServer.stdio args"),
            check_mapping(env, "MCPServer.stdio env", headers=False),
            None if cwd is None else os.fspath(cwd),
        )

    @property
    def target(self) -> str:
        return "stdio: " + shlex.join((self.command, *self.args))

    @property
    def default_name(self) -> str:
        return _default_name(PurePath(self.command).stem)

    def resolved(self, server: str) -> dict[str, str] | None:
        """The `env` with its references resolved (its values are the secrets)."""
        return _resolved(self.env, f"MCP server {server!r} env")


@dataclass(frozen=True, slots=True, repr=False)
class Http:
    """A server at a URL: streamable HTTP, or the legacy HTTP+SSE transport (`sse`)."""

    url: str
    headers: Mapping[str, str] | None = None
    sse: bool = False
    settings: TransportSettings = DEFAULT_SETTINGS  # how the library's transport reaches it

    @classmethod
    def of(cls, url: object, headers: object, *, sse: bool, settings: object = None) -> Http:
        """The checked declaration (`INVALID_CONFIG` naming the field)."""
        kind = "MCPServer.sse" if sse else "MCPServer.http"
        what = f"{kind} url"
        if not isinstance(url, str):
            raise invalid(f"{what} must be a string, got {type(url).__name__}")
        problem = _url_problem(url)
        if problem is not None:
            raise invalid(f"{what} {url!r} {problem}")
        if settings is None:
            settings = DEFAULT_SETTINGS
        elif not isinstance(settings, TransportSettings):
            raise invalid(
                f"{kind} transport must be a TransportSettings, got {type(settings).__name__}"
            )
        checked = check_mapping(headers, "MCPServer headers", headers=True)
        return cls(url, checked, sse, settings)

    @property
    def target(self) -> str:
        return f"{'sse' if self.sse else 'http'}: {self.url}"

    @property
    def default_name(self) -> str:
        return _default_name(urlsplit(self.url).hostname or "")

    def resolved(self, server: str) -> dict[str, str] | None:
        """The `headers` with their references resolved (their values are the secrets)."""
        return _resolved(self.headers, f"MCP server {server!r} header")


Spec: TypeAlias = Stdio | Http


def _url_problem(url: str) -> str | None:
    if _CONTROL.search(url) or url != url.strip():
        return "must not hold control characters or surrounding spaces"
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        return f"is not a valid URL ({exc})"
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return "must be an http:// or https:// URL with a host"
    if parts.username is not None or parts.password is not None:
        return "must not carry credentials: pass them as headers (e.g. Authorization)"
    if port == 0:
        return "has port 0"
    return None
