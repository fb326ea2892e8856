"""A throwaway PostgreSQL cluster a test owns and may stop, crash and restart.

`PgCluster.create(tmp_path)` runs `initdb` into a fresh data directory, picks a free TCP port on
127.0.0.1 and starts the server with `pg_ctl -w`, the way `.ci/run` starts the shared cluster:
as root every command runs as the `postgres` user (`runuser -u postgres --`), otherwise as the
current user. `stop()`, `start()` and `restart()` keep the data directory and the port, so `url`
stays valid across restarts; `destroy()` stops the server at once and removes the directory.

As root the data directory is made under the system temp dir (`/tmp/modelwire-pgcluster.*`,
owned by postgres) rather than under `tmp_path`: pytest's base temp dir is private to root
(0700), and the server process, running as postgres, could not enter it. The Unix socket lives in the data
directory, so a cluster never collides with another server's socket in `/tmp`.

`freeze()` SIGSTOPs the server's processes (the postmaster first, so it forks no new backend,
then every backend), as a server paused by a debugger or a hung host would be; `thaw()` SIGCONTs
them. `crash()` is kill -9 of the postmaster and every backend; `start()` then runs recovery.
Only the processes of this cluster's own postmaster are signalled, never another server's.

Every failing command raises `PgClusterError` naming the command, its exit status, its stderr
and, for a server that would not start, the tail of the server log.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import re
import shlex
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Literal, TypeAlias

__all__ = ["PgCluster", "PgClusterError", "StopMode", "find_pgbin"]

StopMode: TypeAlias = Literal["smart", "fast", "immediate"]

_PG_ROOT = Path("/usr/lib/postgresql")
_COMMAND_TIMEOUT_S = 120.0  # a safety net against a wedged command, not a measurement
_START_ATTEMPTS = 3  # a free port may be taken between probing it and the server binding it


class PgClusterError(RuntimeError):
    """A cluster command failed; the message names the command and carries its stderr."""


def _version_key(path: Path) -> tuple[int, ...]:
    version = path.parent.name
    return tuple(int(part) for part in re.findall(r"\d+", version)) or (0,)


def find_pgbin() -> Path | None:
    """The newest `/usr/lib/postgresql/<version>/bin` holding `initdb` and `pg_ctl` (the Debian
    layout CI installs), `$PGBIN` when set, else None."""
    named = os.environ.get("PGBIN")
    if named:
        return Path(named)
    candidates = [
        path
        for path in _PG_ROOT.glob("*/bin")
        if (path / "initdb").is_file() and (path / "pg_ctl").is_file()
    ]
    return max(candidates, key=_version_key) if candidates else None


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def _exists(pid: int) -> bool:
    """Whether process `pid` exists and is not a zombie (a killed one its parent did not reap)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rpartition(")")[2].split()[:1] != ["Z"]


def _tail(path: Path, lines: int = 30) -> str:
    try:
        text = path.read_text(errors="replace")
    except OSError as exc:
        return f"(cannot read {path}: {exc})"
    return "\n".join(text.splitlines()[-lines:])


class PgCluster:
    """One PostgreSQL server over its own data directory and port (see the module docstring)."""

    def __init__(
        self,
        pgbin: Path,
        datadir: Path,
        port: int,
        *,
        as_postgres: bool,
        settings: Sequence[str] = (),
    ) -> None:
        """Wrap an existing data directory (use `create` for a fresh cluster)."""
        self.pgbin = pgbin
        self.datadir = datadir
        self.port = port
        self.as_postgres = as_postgres
        self.settings = tuple(settings)
        self.logfile = datadir / "server.log"
        self._destroyed = False
        self._frozen: list[int] = []

    # ---- construction ----------------------------------------------------------------------

    @classmethod
    def create(
        cls,
        tmp_path: Path,
        *,
        pgbin: Path | None = None,
        settings: Sequence[str] = ("max_connections=300",),
    ) -> PgCluster:
        """initdb a fresh cluster, start it on a free port of 127.0.0.1 and return it.

        `settings` are extra `-c NAME=VALUE` server settings. Raises `PgClusterError` when no
        PostgreSQL binaries are found or a command fails (the directory is removed then).
        """
        found = pgbin or find_pgbin()
        if found is None or not (found / "initdb").is_file():
            raise PgClusterError(
                f"no PostgreSQL binaries: expected initdb and pg_ctl under {_PG_ROOT}/*/bin "
                "(Debian package `postgresql`) or in $PGBIN"
            )
        as_postgres = os.geteuid() == 0
        if as_postgres:
            try:
                owner = pwd.getpwnam("postgres")
            except KeyError as exc:
                raise PgClusterError("running as root but there is no `postgres` user") from exc
            if shutil.which("runuser") is None:
                raise PgClusterError("running as root but `runuser` is not installed")
            datadir = Path(tempfile.mkdtemp(prefix="modelwire-pgcluster."))
            os.chown(datadir, owner.pw_uid, owner.pw_gid)
        else:
            datadir = Path(tempfile.mkdtemp(prefix="pgdata.", dir=tmp_path))
        cluster = cls(found, datadir, _free_port(), as_postgres=as_postgres, settings=settings)
        try:
            initdb = ["-D", str(datadir), "-A", "trust", "-U", "postgres", "-E", "UTF8"]
            cluster._run("initdb", [*initdb, "--locale=C", "--no-sync"])
            for attempt in range(_START_ATTEMPTS):
                try:
                    cluster.start()
                    break
                except PgClusterError as exc:
                    port_taken = "already in use" in str(exc) or "could not bind" in str(exc)
                    if not port_taken or attempt == _START_ATTEMPTS - 1:
                        raise
                    cluster.port = _free_port()
        except BaseException:
            cluster.destroy()
            raise
        return cluster

    # ---- properties ------------------------------------------------------------------------

    @property
    def url(self) -> str:
        """`postgresql://postgres@127.0.0.1:PORT/postgres` (trust authentication, no password)."""
        return f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    def is_running(self) -> bool:
        """Whether `pg_ctl status` finds a running server on the data directory."""
        if self._destroyed:
            return False
        done = self._exec("pg_ctl", ["status", "-D", str(self.datadir)])
        if done.returncode in (0, 3):  # 0: running, 3: not running
            return done.returncode == 0
        raise self._error("pg_ctl", ["status", "-D", str(self.datadir)], done)

    # ---- lifecycle -------------------------------------------------------------------------

    def start(self) -> None:
        """Start the server on the same port and data directory and wait until it accepts
        connections (`pg_ctl -w`)."""
        self._check_alive()
        options = [
            f"-p {self.port}",
            f"-k {self.datadir}",
            "-c listen_addresses=127.0.0.1",
            *(f"-c {setting}" for setting in self.settings),
        ]
        args = ["start", "-D", str(self.datadir), "-o", " ".join(options)]
        args += ["-l", str(self.logfile), "-w", "-t", "60"]
        done = self._exec("pg_ctl", args)
        if done.returncode != 0:
            raise self._error("pg_ctl", args, done, log=True)

    def stop(self, mode: StopMode = "fast") -> None:
        """Stop the server (`pg_ctl stop -m MODE -w`): `fast` rolls back sessions and shuts down
        cleanly, `immediate` aborts like a crash (the next start runs recovery). Stopping a
        stopped cluster does nothing."""
        self._check_alive()
        if not self.is_running():
            return
        self._run("pg_ctl", ["stop", "-D", str(self.datadir), "-m", mode, "-w", "-t", "60"])

    def restart(self, mode: StopMode = "fast") -> None:
        """`stop(mode)` then `start()`: same port, same data."""
        self.stop(mode)
        self.start()

    def pids(self) -> list[int]:
        """The postmaster's pid, then those of its children (backends and helpers); [] when no
        server runs."""
        try:
            first = (self.datadir / "postmaster.pid").read_text().split("\n", 1)[0]
        except OSError:
            return []
        if not first.strip().isdigit():
            return []
        postmaster = int(first)
        children: list[int] = []
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            fields = stat.rpartition(")")[2].split()
            if len(fields) > 1 and fields[1] == str(postmaster):
                children.append(int(entry.name))
        alive = _exists(postmaster)
        return [postmaster, *children] if alive else children

    def freeze(self) -> None:
        """SIGSTOP the postmaster, then every process it forked (see the module docstring)."""
        self._check_alive()
        pids = self.pids()
        if not pids:
            raise PgClusterError(f"{self!r}: no server process to freeze")
        os.kill(pids[0], signal.SIGSTOP)  # first: no backend is forked after the listing
        for pid in self.pids()[1:]:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGSTOP)
        self._frozen = self.pids()

    def thaw(self) -> None:
        """SIGCONT every process `freeze()` stopped (backends first); idempotent."""
        frozen, self._frozen = self._frozen, []
        for pid in reversed(frozen):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGCONT)

    def crash(self) -> None:
        """kill -9 the postmaster and every backend, and wait until they are gone."""
        self._check_alive()
        self.thaw()
        pids = self.pids()
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        deadline = time.monotonic() + _COMMAND_TIMEOUT_S
        while any(_exists(pid) for pid in pids):
            if time.monotonic() > deadline:
                raise PgClusterError(f"{self!r}: processes {pids} survived SIGKILL")
            time.sleep(0.02)
        # A killed postmaster may stay a zombie (a container's init need not reap it): its pid
        # still answers kill(pid, 0), so its lock files would make the next start refuse.
        for lock in ("postmaster.pid", f".s.PGSQL.{self.port}.lock"):
            with contextlib.suppress(FileNotFoundError):
                (self.datadir / lock).unlink()

    def destroy(self) -> None:
        """Stop the server immediately (if it runs) and remove the data directory; idempotent."""
        if self._destroyed:
            return
        self.thaw()  # a stopped server could not act on pg_ctl's signal
        try:
            if self.datadir.exists():
                with contextlib.suppress(PgClusterError):
                    self._exec("pg_ctl", ["stop", "-D", str(self.datadir), "-m", "immediate"])
        finally:
            self._destroyed = True
            shutil.rmtree(self.datadir, ignore_errors=True)

    def __enter__(self) -> PgCluster:
        return self

    def __exit__(self, *exc: object) -> None:
        self.destroy()

    def __repr__(self) -> str:
        return f"PgCluster(url={self.url!r}, datadir={str(self.datadir)!r})"

    # ---- commands --------------------------------------------------------------------------

    def _check_alive(self) -> None:
        if self._destroyed:
            raise PgClusterError(f"{self!r} was destroyed")

    def _argv(self, program: str, args: Sequence[str]) -> list[str]:
        argv = [str(self.pgbin / program), *args]
        return ["runuser", "-u", "postgres", "--", *argv] if self.as_postgres else argv

    def _exec(self, program: str, args: Sequence[str]) -> subprocess.CompletedProcess[str]:
        argv = self._argv(program, args)
        env = {k: v for k, v in os.environ.items() if not k.startswith("PG")}
        env["LC_ALL"] = "C"
        try:
            return subprocess.run(
                argv,
                cwd="/",  # the postgres user may not be allowed into the test's cwd
                env=env,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                text=True,
                timeout=_COMMAND_TIMEOUT_S,
                check=False,
            )
        except subprocess.TimeoutExpired as exc:
            stderr = exc.stderr.decode(errors="replace") if isinstance(exc.stderr, bytes) else ""
            raise PgClusterError(
                f"command timed out after {_COMMAND_TIMEOUT_S:.0f}s: {shlex.join(argv)}\n"
                f"stderr:\n{stderr.strip()}"
            ) from exc
        except OSError as exc:
            raise PgClusterError(f"cannot run {shlex.join(argv)}: {exc}") from exc

    def _run(self, program: str, args: Sequence[str]) -> None:
        done = self._exec(program, args)
        if done.returncode != 0:
            raise self._error(program, args, done)

    def _error(
        self,
        program: str,
        args: Sequence[str],
        done: subprocess.CompletedProcess[str],
        *,
        log: bool = False,
    ) -> PgClusterError:
        text = (
            f"command failed (exit status {done.returncode}): {shlex.join(self._argv(program, args))}"
            f"\nstderr:\n{done.stderr.strip() or '(empty)'}"
        )
        if done.stdout.strip():
            text += f"\nstdout:\n{done.stdout.strip()}"
        if log:
            text += f"\nserver log {self.logfile} (tail):\n{_tail(self.logfile)}"
        return PgClusterError(text)
