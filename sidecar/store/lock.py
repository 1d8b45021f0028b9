"""One data dir, one server: an exclusive ``flock`` on ``DATA_DIR/memsidecar.lock``.

The lock file holds the holder's pid; the kernel drops the lock when the process dies, so a
crashed server never leaves a stale lock behind.
"""

from __future__ import annotations

import errno
import fcntl
import os
from pathlib import Path

from sidecar.files import FILE_MODE

LOCK_FILENAME = "memsidecar.lock"


class DataDirLocked(OSError):
    """Another process serves this data dir."""


class DataDirLock:
    def __init__(self, data_dir: Path | str) -> None:
        self.path = Path(data_dir) / LOCK_FILENAME
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, FILE_MODE)
        except OSError as err:
            if err.errno != errno.EROFS or not self.path.exists():
                raise
            fd = os.open(self.path, os.O_RDONLY)  # a read-only file system: a read-only server
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.read(fd, 32).decode(errors="replace").strip() or "unknown"
            os.close(fd)
            raise DataDirLocked(
                f"data dir {Path(data_dir)} is in use by another memsidecar server (pid "
                f"{holder}); stop it first or use another --data-dir") from None
        try:  # the pid is for the message above; a full or read-only disk does without it
            os.fchmod(fd, FILE_MODE)
            os.ftruncate(fd, 0)
            os.write(fd, f"{os.getpid()}\n".encode())
        except OSError:
            pass
        self._fd: int | None = fd

    def release(self) -> None:
        if self._fd is not None:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None
