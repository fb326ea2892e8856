"""Run the real `modelwire` command on a pseudo-terminal (POSIX only), as a person would.

`PtyCli` starts the command with a pty as its stdin, stdout, stderr and controlling terminal
(so Ctrl-C is a real SIGINT from the terminal driver), with `TERM=xterm` so prompt-toolkit edits
the line for real (cursor-position requests are off: nothing answers them here). `until(text)`
reads until `text` appears in the output with escape sequences removed, bounded by a timeout.
"""

from __future__ import annotations

import asyncio
import os
import re
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from cli_helpers import cli_env, modelwire_argv

_ESCAPES = re.compile(rb"\x1b(\[[0-9;?]*[ -/]*[@-~]|\][^\x07]*\x07|[()][A-Za-z0-9]|[=>78])")


def plain(data: bytes) -> str:
    """Terminal output without escape sequences and carriage returns."""
    return _ESCAPES.sub(b"", data).replace(b"\r", b"").decode(errors="replace")


def _controlling_terminal() -> None:
    """In the child: a new session whose controlling terminal is the pty on stdin."""
    import fcntl
    import termios

    os.setsid()
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)


class PtyCli:
    """One `modelwire` process on a pty; use as `async with PtyCli(...) as cli:`."""

    def __init__(
        self,
        home: Path,
        args: Sequence[str],
        env: Mapping[str, str] | None = None,
        term: str = "xterm",
    ) -> None:
        self.home = home
        self.args = list(args)
        self.env = cli_env(
            home, {"TERM": term, "PROMPT_TOOLKIT_NO_CPR": "1", "COLUMNS": "120", **(env or {})}
        )
        self.seen = bytearray()
        self.proc: asyncio.subprocess.Process | None = None
        self._fd = -1

    async def __aenter__(self) -> PtyCli:
        import pty

        main_fd, child_fd = pty.openpty()
        self._fd = main_fd
        self.proc = await asyncio.create_subprocess_exec(
            *modelwire_argv(),
            *self.args,
            env=self.env,
            cwd=self.home,
            stdin=child_fd,
            stdout=child_fd,
            stderr=child_fd,
            preexec_fn=_controlling_terminal,
        )
        os.close(child_fd)
        return self

    async def __aexit__(self, *exc: object) -> None:
        os.close(self._fd)
        if self.proc is not None and self.proc.returncode is None:
            self.proc.kill()
            await self.proc.wait()

    @property
    def text(self) -> str:
        """Everything printed so far, escape sequences removed."""
        return plain(bytes(self.seen))

    async def until(self, marker: str, *, after: int = 0, timeout: float = 20) -> int:
        """Read until `marker` appears in the plain output past offset `after`; returns the
        offset just past it."""
        try:
            return await self._until(marker, after, timeout)
        except TimeoutError:
            raise AssertionError(f"no {marker!r} after offset {after}:\n{self.text}") from None

    async def _until(self, marker: str, after: int, timeout: float) -> int:
        async with asyncio.timeout(timeout):
            while True:
                text = self.text
                found = text.find(marker, after)
                if found >= 0:
                    return found + len(marker)
                try:
                    chunk = await asyncio.to_thread(os.read, self._fd, 4096)
                except OSError:
                    raise AssertionError(f"the process ended before {marker!r}:\n{text}") from None
                if not chunk:
                    raise AssertionError(f"the process ended before {marker!r}:\n{text}")
                self.seen.extend(chunk)

    async def prompt(self, after: int = 0) -> int:
        """Wait for the next `you>` prompt after `after`."""
        return await self.until("you>", after=after)

    def send(self, keys: bytes) -> None:
        """Type `keys` (b"\\r" is Enter, b"\\x1b[A" the up arrow, b"\\x03" Ctrl-C, b"\\x04" Ctrl-D)."""
        os.write(self._fd, keys)

    async def exit_code(self, timeout: float = 20) -> int:
        """Wait for the process to end, still draining its output; returns its exit code."""
        assert self.proc is not None
        async with asyncio.timeout(timeout):
            while self.proc.returncode is None:
                try:
                    chunk = await asyncio.to_thread(os.read, self._fd, 4096)
                except OSError:
                    break
                if not chunk:
                    break
                self.seen.extend(chunk)
            return await self.proc.wait()


POSIX_ONLY = sys.platform == "win32"
