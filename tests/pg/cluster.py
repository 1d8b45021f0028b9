"""A throwaway PostgreSQL cluster: Debian's binaries, a temp dir, a free loopback port.

``initdb`` refuses root, so as root every PostgreSQL binary runs as the ``postgres`` system
user (``runuser -u postgres --``) on a temp dir chowned to it; the socket stays in that dir.
Any failure raises ``ClusterError`` with the server's log: the suites that use a cluster fail,
they never skip.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path

import psycopg

BINDIR = Path("/usr/lib/postgresql/15/bin")
# runuser lives in /usr/sbin (util-linux), which a non-login root shell may not have on PATH.
RUNUSER = shutil.which("runuser") or "/usr/sbin/runuser"
INSTALL_HINT = "install Debian's postgresql (make install runs clients/apt.sh for it)"


class ClusterError(RuntimeError):
    pass


class Cluster:
    def __init__(self) -> None:
        if not (BINDIR / "initdb").exists():
            raise ClusterError(f"{BINDIR}/initdb not found: {INSTALL_HINT}")
        self.dir = Path(tempfile.mkdtemp(prefix="pg", dir="/tmp"))
        self.data = self.dir / "data"
        self.log = self.dir / "log"
        self.port = 0
        self._as_postgres = os.geteuid() == 0
        if self._as_postgres:
            shutil.chown(self.dir, "postgres", "postgres")
        self._run("initdb", "-D", str(self.data), "-A", "trust", "-U", "postgres", "-N",
                  "-E", "UTF8", "--locale=C")
        self._databases = 0

    def dsn(self, dbname: str = "postgres") -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/{dbname}"

    def start(self, port: int = 0) -> None:
        """Start on ``port`` (0: a free one; a restart passes the old one, so DSNs hold)."""
        self.port = port or _free_port()
        # fsync off: a commit survives a crash of the server (stop -m immediate), not of the
        # machine; synchronous_commit stays on, so an acknowledged commit is never lost.
        options = (f"-p {self.port} -k {self.dir} -c listen_addresses=127.0.0.1 "
                   "-c fsync=off -c full_page_writes=off "
                   "-c max_connections=200")
        self._run("pg_ctl", "-D", str(self.data), "-l", str(self.log), "-o", options,
                  "-w", "-t", "60", "start")

    def stop(self, mode: str = "fast") -> None:
        self._run("pg_ctl", "-D", str(self.data), "-m", mode, "-w", "stop")

    def new_database(self) -> str:
        """A fresh empty database; its DSN."""
        self._databases += 1
        name = f"t{os.getpid()}_{self._databases}"
        with psycopg.connect(self.dsn(), autocommit=True) as conn:
            conn.execute(f"CREATE DATABASE {name}".encode())
        return self.dsn(name)

    def remove(self) -> None:
        try:
            self.stop("immediate")
        except ClusterError:
            pass
        shutil.rmtree(self.dir, ignore_errors=True)

    def _run(self, binary: str, *args: str) -> None:
        command = [str(BINDIR / binary), *args]
        if self._as_postgres:
            command = [RUNUSER, "-u", "postgres", "--", *command]
        done = subprocess.run(command, capture_output=True, text=True, timeout=120)
        if done.returncode != 0:
            log = self.log.read_text() if self.log.exists() else ""
            raise ClusterError(f"{' '.join(command)} failed ({done.returncode}):\n"
                               f"{done.stdout}{done.stderr}{log[-2000:]}")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])
