"""What failed, in words: the `MCP` failures of a start and of a tool call.

The SDK raises what its transports meet — an `OSError` from spawning, `MCPError`s (a closed
connection, a JSON-RPC error, an HTTP answer that is not MCP), httpx errors, timeouts — often
wrapped in exception groups by its task groups. These functions pick the exception that says what
happened and name it with the server and its transport (`Connection.failure`, which masks the
secret values); the chain of the original exception is never attached (it may quote a secret).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

import httpx2
from mcp import MCPError
from mcp_types import CONNECTION_CLOSED, REQUEST_TIMEOUT
from pydantic import ValidationError

from ..errors import ErrorCode, HarnessError
from ._spec import Stdio

if TYPE_CHECKING:
    from ._connection import Connection

__all__ = ["call_failure", "connection_closed", "start_failure"]

_MAX_DETAIL = 300


def _leaf(exc: BaseException) -> BaseException:
    """The first exception inside any exception groups that is not a cancellation."""
    while isinstance(exc, BaseExceptionGroup):
        inner: list[BaseException] = [e for e in exc.exceptions if isinstance(e, Exception)]
        exc = (inner or [*exc.exceptions])[0]
    return exc


def connection_closed(error: BaseException) -> bool:
    """Whether `error` says the session's connection is closed (the server went away)."""
    exc = _leaf(error)
    return isinstance(exc, MCPError) and exc.code == CONNECTION_CLOSED


def _detail(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    first = text[0] if text else ""
    return f"{type(exc).__name__}: {first[:_MAX_DETAIL]}" if first else type(exc).__name__


def start_failure(connection: Connection, error: BaseException) -> HarnessError:
    """Why the server did not start, from what its start raised."""
    exc = _leaf(error)
    if isinstance(exc, HarnessError):
        return exc
    spec = connection.spec
    stdio = isinstance(spec, Stdio)
    if isinstance(exc, OSError) and stdio:
        assert isinstance(spec, Stdio)
        if spec.cwd is not None and not os.path.isdir(spec.cwd):
            return connection.failure(f"could not start: its cwd {spec.cwd!r} is not a directory")
        if isinstance(exc, FileNotFoundError):
            return connection.failure(f"could not start: command {spec.command!r} not found")
        if isinstance(exc, PermissionError):
            return connection.failure(f"could not start: {spec.command!r} is not executable")
        return connection.failure(f"could not start: {exc.strerror or _detail(exc)}")
    if isinstance(exc, MCPError):
        if exc.code == CONNECTION_CLOSED:
            where = "exited" if stdio else "closed the connection"
            return connection.failure(f"{where} before answering the MCP handshake")
        if exc.code == REQUEST_TIMEOUT:
            return connection.failure("did not answer the MCP handshake in time")
        message = exc.error.message[:_MAX_DETAIL]
        return connection.failure(f"did not answer as an MCP server: {message}")
    if isinstance(exc, httpx2.HTTPError):
        return connection.failure(f"could not be reached: {_detail(exc)}")
    if isinstance(exc, TimeoutError):
        return connection.failure("did not answer the MCP handshake in time")
    if isinstance(exc, ValidationError):
        return connection.failure(f"answered the MCP handshake with an invalid message: {exc}")
    return connection.failure(f"failed to start: {_detail(exc)}")


def call_failure(
    connection: Connection, tool: str, timeout_ms: float, error: BaseException
) -> HarnessError:
    """Why `tools/call` of `tool` failed, from what the call raised (past the limit:
    `TOOL_TIMEOUT`; anything else about the server: `MCP`)."""
    exc = _leaf(error)
    if isinstance(exc, HarnessError):
        return exc
    call = f"tools/call {tool!r}"
    if isinstance(exc, TimeoutError) or (isinstance(exc, MCPError) and exc.code == REQUEST_TIMEOUT):
        return connection.failure(
            f"did not answer {call} within {timeout_ms:g} ms", ErrorCode.TOOL_TIMEOUT
        )
    if isinstance(exc, MCPError):
        if exc.code == CONNECTION_CLOSED:
            return connection.failure(f"went away during {call} (the connection closed)")
        message = exc.error.message[:_MAX_DETAIL]
        return connection.failure(f"refused {call}: {message} (JSON-RPC error {exc.code})")
    if isinstance(exc, httpx2.HTTPError):
        return connection.failure(f"could not be reached for {call}: {_detail(exc)}")
    if isinstance(exc, (ValidationError, RuntimeError)):
        return connection.failure(f"answered {call} with an invalid result: {_detail(exc)}")
    return connection.failure(f"failed during {call}: {_detail(exc)}")
