"""Owner-only files: the data dir is 0700 and every file the sidecar writes is 0600, whatever
the process umask (tokens, config write-backs, the lock, the database and its WAL/shm, indexes).
"""

from __future__ import annotations

import errno
import logging
import os
import re
import tempfile
from collections.abc import Iterable
from pathlib import Path

log = logging.getLogger(__name__)

DIR_MODE = 0o700
FILE_MODE = 0o600
TEMP_SUFFIX = ".tmp"
_MKSTEMP_PART = r"[A-Za-z0-9_]{8}"  # tempfile's random name part


def private_dir(path: Path | str) -> Path:
    """Create ``path`` (and parents) if needed; make it 0700 and every file in it 0600."""
    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    try:
        os.chmod(path, DIR_MODE)
        for child in path.iterdir():
            if child.is_file() and not child.is_symlink():
                os.chmod(child, FILE_MODE)
    except OSError as err:
        if err.errno != errno.EROFS:
            raise  # a read-only file system keeps its modes: nothing is written there
    return path


def write_atomic(path: Path, text: str) -> None:
    """Write ``text`` as a 0600 file via a temp file in the same directory: fsync, rename
    over ``path``, fsync the directory."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=TEMP_SUFFIX, dir=path.parent)
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


def atomic_temps(path: Path) -> re.Pattern[str]:
    """The names ``write_atomic(path, ...)`` gives its temp files: ``.NAME.XXXXXXXX.tmp``."""
    return re.compile(rf"\.{re.escape(path.name)}\.{_MKSTEMP_PART}{re.escape(TEMP_SUFFIX)}\Z")


def remove_stale_temps(directory: Path, atomic: Iterable[Path], fixed: Iterable[Path]) -> int:
    """Remove the temp files a crash left in ``directory`` (call it holding the data dir's
    lock, so no writer of ours is running): ``write_atomic``'s for the files ``atomic`` and
    the fixed names ``fixed``. Only regular files directly in ``directory`` with one of these
    names are touched. The number removed."""
    patterns = [atomic_temps(path) for path in atomic if path.parent == directory]
    named = {path.name for path in fixed if path.parent == directory}
    removed = 0
    try:
        entries = list(os.scandir(directory))
    except OSError:
        return 0
    for entry in entries:
        ours = entry.name in named or any(p.match(entry.name) for p in patterns)
        if not ours or not entry.is_file(follow_symlinks=False):
            continue
        try:
            os.unlink(entry.path)
            removed += 1
        except FileNotFoundError:
            pass
        except OSError as err:  # a read-only data dir: left for a start that can remove it
            log.warning("stale temp file not removed", extra={"path": entry.path,
                                                               "error": err.strerror})
    if removed:
        log.info("stale temp files removed", extra={"dir": str(directory), "files": removed})
    return removed
