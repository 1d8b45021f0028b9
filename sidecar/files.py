"""Owner-only files: the data dir is 0700 and every file the sidecar writes is 0600, whatever
the process umask (tokens, config write-backs, the lock, the database and its WAL/shm, indexes).
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

DIR_MODE = 0o700
FILE_MODE = 0o600


def private_dir(path: Path | str) -> Path:
    """Create ``path`` (and parents) if needed; make it 0700 and every file in it 0600."""
    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    os.chmod(path, DIR_MODE)
    for child in path.iterdir():
        if child.is_file() and not child.is_symlink():
            os.chmod(child, FILE_MODE)
    return path


def write_atomic(path: Path, text: str) -> None:
    """Write ``text`` as a 0600 file via a temp file in the same directory: fsync, rename
    over ``path``, fsync the directory."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, FILE_MODE)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    dir_fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)
