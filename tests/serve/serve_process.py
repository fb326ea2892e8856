"""The real `modelwire serve` as a subprocess of a test: started on a free port, its URL read
from its first stderr line, stopped with SIGTERM."""

from __future__ import annotations

import asyncio
import os
import re
import signal
import sys
from pathlib import Path
from typing import Any

from serve_helpers import ADMIN, UPSTREAM_KEYS, toml_config

_LISTENING = re.compile(rb"listening on (http://127\.0\.0\.1:\d+)")


class ServeProcess:
    """One `modelwire serve` process (see the module docstring)."""

    def __init__(self, settings: dict[str, Any], log: str, tmp: Path, name: str = "serve") -> None:
        self.config = tmp / f"{name}.toml"
        self.config.write_text(toml_config(settings))
        self.log = log
        self.url = ""
        self.stderr = b""
        self.proc: asyncio.subprocess.Process | None = None

    async def __aenter__(self) -> ServeProcess:
        env = {**os.environ, **UPSTREAM_KEYS, "MODELWIRE_ADMIN_KEY": ADMIN}
        self.proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "modelwire",
            "serve",
            "--config",
            str(self.config),
            "--log",
            self.log,
            "--port",
            "0",
            env=env,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.PIPE,
        )
        assert self.proc.stderr is not None
        while True:
            line = await asyncio.wait_for(self.proc.stderr.readline(), 60)  # a hang guard
            self.stderr += line
            if not line:
                raise AssertionError(f"modelwire serve exited: {self.stderr.decode()}")
            found = _LISTENING.search(line)
            if found:
                self.url = found.group(1).decode()
                return self

    def terminate(self) -> None:
        """Send SIGTERM."""
        assert self.proc is not None
        self.proc.send_signal(signal.SIGTERM)

    async def wait(self) -> int:
        """Wait for the exit (a hang guard of 60 s); the rest of stderr is kept."""
        assert self.proc is not None and self.proc.stderr is not None
        rest = await asyncio.wait_for(self.proc.stderr.read(), 60)
        self.stderr += rest
        return await asyncio.wait_for(self.proc.wait(), 60)

    async def __aexit__(self, *exc: object) -> None:
        if self.proc is not None and self.proc.returncode is None:
            self.terminate()
            await self.wait()
