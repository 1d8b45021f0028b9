"""A small readers-writer lock: many concurrent readers, one writer, writers preferred.

Used around native indexes whose reads release the GIL (hnswlib ``knn_query``) but whose
writes must not overlap with reads. A waiting writer blocks new readers, so a stream of
searches cannot starve an import; a reader may instead ask not to block at all and use
another path (the exact index) while a write is in progress.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager


class RWLock:
    def __init__(self) -> None:
        self._cond = threading.Condition(threading.Lock())
        self._readers = 0
        self._writer = False
        self._writers_waiting = 0

    def acquire_read(self, blocking: bool = True, ahead: bool = False) -> bool:
        """``ahead``: pass waiting writers (wait only for one writing), for a reader that
        other readers, which the waiting writer waits for, may be waiting for."""
        with self._cond:
            if not blocking and (self._writer or self._writers_waiting):
                return False
            while self._writer or (self._writers_waiting and not ahead):
                self._cond.wait()
            self._readers += 1
            return True

    def release_read(self) -> None:
        with self._cond:
            self._readers -= 1
            if self._readers == 0 and self._writers_waiting:  # only a writer waits for this
                self._cond.notify_all()

    def acquire_write(self) -> None:
        with self._cond:
            self._writers_waiting += 1
            try:
                while self._writer or self._readers:
                    self._cond.wait()
            finally:
                self._writers_waiting -= 1
            self._writer = True

    def release_write(self) -> None:
        with self._cond:
            self._writer = False
            self._cond.notify_all()

    @contextmanager
    def read(self) -> Iterator[None]:
        self.acquire_read()
        try:
            yield
        finally:
            self.release_read()

    @contextmanager
    def write(self) -> Iterator[None]:
        self.acquire_write()
        try:
            yield
        finally:
            self.release_write()
