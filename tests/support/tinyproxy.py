"""A real forward proxy for the transport tests: Debian's tinyproxy, started on a free loopback
port with its own configuration (optionally with Basic auth), logging every request it serves.

`.ci/run` installs the package; a missing binary fails the tests that need it (never a skip).
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from types import TracebackType


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class TinyProxy:
    """``with TinyProxy(auth=("alice", "pw")) as proxy: proxy.url`` (credentials included),
    `proxy.bare_url` (without), `proxy.log()` (what it logged so far)."""

    def __init__(self, auth: tuple[str, str] | None = None) -> None:
        binary = shutil.which("tinyproxy") or "/usr/bin/tinyproxy"
        if not os.path.exists(binary):
            raise RuntimeError(
                "tinyproxy is not installed (apt-get install tinyproxy; see .ci/run)"
            )
        self.binary = binary
        self.auth = auth
        self.port = free_port()
        self._dir = tempfile.mkdtemp(prefix="mw-tinyproxy-")
        os.chmod(self._dir, 0o755)
        self._log = Path(self._dir) / "out.log"
        self._proc: subprocess.Popen[bytes] | None = None

    @property
    def bare_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def url(self) -> str:
        if self.auth is None:
            return self.bare_url
        return f"http://{self.auth[0]}:{self.auth[1]}@127.0.0.1:{self.port}"

    def log(self) -> str:
        return self._log.read_text(errors="replace") if self._log.exists() else ""

    def __enter__(self) -> TinyProxy:
        lines = [
            f"Port {self.port}",
            "Listen 127.0.0.1",
            "Timeout 30",
            "LogLevel Connect",
            "MaxClients 200",
            "Allow 127.0.0.1",
        ]
        if os.geteuid() == 0:  # tinyproxy drops root; it needs somebody to become
            lines[:0] = ["User nobody", "Group nogroup"]
        if self.auth is not None:
            lines.append(f"BasicAuth {self.auth[0]} {self.auth[1]}")
        conf = Path(self._dir) / "tinyproxy.conf"
        conf.write_text("\n".join(lines) + "\n")
        out = self._log.open("wb")
        self._proc = subprocess.Popen(
            [self.binary, "-d", "-c", str(conf)], stdout=out, stderr=subprocess.STDOUT
        )
        out.close()
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                raise RuntimeError(f"tinyproxy exited at start: {self.log()}")
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.2).close()
                return self
            except OSError:
                time.sleep(0.02)
        raise RuntimeError(f"tinyproxy did not start: {self.log()}")

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._proc is not None:
            self._proc.terminate()
            try:
                self._proc.wait(5)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
        shutil.rmtree(self._dir, ignore_errors=True)
