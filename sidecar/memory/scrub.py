"""After an erasure, the bytes leave the disk: the index files are written again without the
erased memories' vectors and terms, then the SQLite WAL is checkpointed and truncated (the
database file itself holds no copy: the store deletes with ``secure_delete``).

``now`` does it in the caller's thread (ForgetUser and a hard ForgetMemory answer once it is
done); ``later`` hands it to a daemon thread (the captures the capacity gate erased inside a
write, which must not wait for it), which coalesces the requests made meanwhile.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable, Sequence
from typing import Protocol

from sidecar.store.contract import SqlStore

log = logging.getLogger(__name__)


class IndexFiles(Protocol):
    """The index files under the data dir (the retrieval engine's)."""

    def rewrite_without(self, labels: Sequence[int]) -> None:
        """Write the saved indexes again, holding nothing of ``labels`` (already removed
        from the live indexes)."""
        ...


class DiskScrub:
    def __init__(self, db: SqlStore, files: IndexFiles | None = None) -> None:
        self.db = db
        self.files = files
        self._pending: set[int] = set()
        self._wanted = threading.Event()
        self._lock = threading.Lock()
        self._run_lock = threading.Lock()  # one scrub at a time
        self._thread: threading.Thread | None = None
        self._stopped = False

    def now(self, labels: Iterable[int]) -> bool:
        """Scrub for ``labels`` (and any scrub still pending); False when the WAL could not
        be truncated yet (readers kept it busy)."""
        with self._lock:
            todo = sorted(self._pending.union(labels))
            self._pending.clear()
        with self._run_lock:
            if self.files is not None:
                self.files.rewrite_without(todo)
            return self.db.purge_wal()

    def later(self, labels: Iterable[int]) -> None:
        with self._lock:
            self._pending.update(labels)
            if self._stopped:
                return
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="erasure-scrub",
                                                daemon=True)
                self._thread.start()
        self._wanted.set()

    def _run(self) -> None:
        while True:
            self._wanted.wait()
            self._wanted.clear()
            if self._stopped:
                return
            try:
                self.now(())
            except Exception:
                log.exception("erasure scrub failed; the next erasure or a restart retries")

    def close(self) -> None:
        """Stop the thread; what is still pending is scrubbed here."""
        with self._lock:
            self._stopped = True
            thread = self._thread
            pending = bool(self._pending)
        self._wanted.set()
        if thread is not None:
            thread.join()
        if pending:
            try:
                self.now(())
            except Exception:
                log.exception("erasure scrub at stop failed")
