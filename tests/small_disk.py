"""A small file system of the test's own, to fill and to make read-only: a 20 MiB tmpfs.

Mounting one needs root (or CAP_SYS_ADMIN). Without it the tests that need one skip and say
so: a full disk cannot be produced for real otherwise, and a directory made read-only with
chmod neither stops root nor survives the start (the sidecar makes its data dir 0700).
"""

from __future__ import annotations

import errno
import os
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

FILLER = "filler"


class SmallDisk:
    def __init__(self, root: Path) -> None:
        self.root = root

    def fill(self) -> None:
        """Write a file until the disk has not one byte left."""
        fd = os.open(self.root / FILLER, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        try:
            for size in (1 << 20, 4096, 1):
                while True:
                    try:
                        os.write(fd, bytes(size))
                    except OSError as err:
                        assert err.errno == errno.ENOSPC, err
                        break
        finally:
            os.close(fd)

    def free(self) -> None:
        (self.root / FILLER).unlink(missing_ok=True)

    def read_only(self) -> None:
        """Remount read-only (nothing may hold a file of it open for writing)."""
        _mount("-o", "remount,ro", str(self.root))

    def writable(self) -> None:
        _mount("-o", "remount,rw", str(self.root))


def _mount(*args: str) -> None:
    subprocess.run(["mount", *args], check=True, capture_output=True)


@contextmanager
def small_disk(where: Path, size: str = "20m") -> Iterator[SmallDisk]:
    """A tmpfs of ``size`` mounted at ``where`` (created); skips the test when it cannot."""
    where.mkdir(parents=True, exist_ok=True)
    if shutil.which("mount") is None:
        pytest.skip("needs a tmpfs of its own to fill: no `mount` command here")
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size},mode=0700", "tmpfs",
                           str(where)], capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"needs a tmpfs of its own to fill (root or CAP_SYS_ADMIN): `mount -t "
                    f"tmpfs` failed: {done.stderr.strip()}")
    try:
        yield SmallDisk(where)
    finally:
        subprocess.run(["umount", "-l", str(where)], capture_output=True)
