"""A small file system of the test's own, to fill and to make read-only: a 20 MiB tmpfs.

Mounting one needs root (or CAP_SYS_ADMIN). Without either, each test that asks for one
(a ``disk`` fixture) runs in a child pytest inside a user and mount namespace of its own
(``unshare --user --map-root-user --mount``), where the test's user may mount a tmpfs; the
child's outcome is the test's. A machine that allows neither fails those tests, saying why:
a full disk cannot be produced for real otherwise, and a directory made read-only with chmod
neither stops root nor survives the start (the sidecar makes its data dir 0700).
"""

from __future__ import annotations

import errno
import functools
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

# Set in the child pytest that runs a test inside its own mount namespace.
IN_NAMESPACE = "MEMSIDECAR_TEST_MOUNT_NAMESPACE"
# "namespace": behave as a machine without mount rights (to exercise the fallback).
FORCE = "MEMSIDECAR_TEST_MOUNT"
UNSHARE = ("unshare", "--user", "--map-root-user", "--mount")
ROOT = Path(__file__).resolve().parents[1]

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


@functools.cache
def can_mount() -> bool:
    """Whether this process may mount a tmpfs (tried once, on a scratch directory)."""
    if shutil.which("mount") is None or (os.environ.get(FORCE) == "namespace"
                                         and not os.environ.get(IN_NAMESPACE)):
        return False
    with tempfile.TemporaryDirectory() as scratch:
        done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", scratch],
                              capture_output=True)
        if done.returncode != 0:
            return False
        subprocess.run(["umount", scratch], capture_output=True)
        return True


def in_namespaces(items: list[pytest.Item]) -> None:
    """Without mount rights, every test asking for a ``disk`` is replaced by one that runs it
    in a child pytest inside a user and mount namespace of its own."""
    wanting = [i for i, item in enumerate(items) if "disk" in getattr(item, "fixturenames", ())]
    if not wanting or os.environ.get(IN_NAMESPACE) or can_mount():
        return
    for i in wanting:
        item = items[i]
        items[i] = pytest.Function.from_parent(
            item.parent, name=item.name, callobj=_in_namespace(item.nodeid))


def _in_namespace(nodeid: str) -> Callable[[], None]:
    def run() -> None:
        if shutil.which("unshare") is None:
            pytest.fail("needs a tmpfs of its own to fill: no `mount` rights (root or "
                        "CAP_SYS_ADMIN) and no `unshare` for a mount namespace")
        done = subprocess.run([*UNSHARE, sys.executable, "-m", "pytest", "-q", "-p",
                               "no:cacheprovider", nodeid], cwd=ROOT, capture_output=True,
                              text=True, env={**os.environ, IN_NAMESPACE: "1"})
        assert done.returncode == 0, (
            f"{nodeid} in a mount namespace (`{' '.join(UNSHARE)}`):\n"
            f"{done.stdout[-6000:]}{done.stderr[-2000:]}")

    return run


@contextmanager
def small_disk(where: Path, size: str = "20m") -> Iterator[SmallDisk]:
    """A tmpfs of ``size`` mounted at ``where`` (created)."""
    where.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size},mode=0700", "tmpfs",
                           str(where)], capture_output=True, text=True)
    if done.returncode != 0:
        pytest.fail(f"needs a tmpfs of its own to fill (root, CAP_SYS_ADMIN or a user "
                    f"namespace): `mount -t tmpfs` failed: {done.stderr.strip()}")
    try:
        yield SmallDisk(where)
    finally:
        subprocess.run(["umount", "-l", str(where)], capture_output=True)
