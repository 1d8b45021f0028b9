"""Writes that need not hold up a reply: jobs run in submission order, each in a transaction.

``WriteBehind`` runs them on one daemon thread, so a caller returns as soon as its job is
queued (Inject's state and access records: their SQLite transaction leaves the reply path;
docs/decisions/0003-write-behind-state.md). Jobs queued while it writes (at most
``MAX_GROUP``) share its next transaction, each in a savepoint of its own: under load the
access records of many Injects cost one commit (one round trip batch on PostgreSQL). Jobs
that met a store away (``Unavailable``) are kept, at most ``MAX_HELD``, and run again first
with the next group, or alone every ``RETRY_S`` seconds while no job comes. A group the disk
refused (``StorageFault``: full, read-only) is rolled back and counted in ``failures``; the
refusal is logged and counted where it was refused (``sidecar.disk``), without a traceback,
and the thread goes on with the next jobs.
What it trades: a crash (kill -9, power loss) can lose the jobs still queued, i.e. the last
call or two; a clean stop (``close``) runs all of them first. ``flush`` waits for every job
queued so far (and tries the held ones again), for readers that must see them. At most
``max_pending`` jobs wait; beyond that ``submit`` blocks (back-pressure instead of unbounded
memory if the disk stalls).

``WriteThrough`` runs each job at once in the caller's thread (same interface, for tests and
tools that want the row written when the call returns).
"""

from __future__ import annotations

import logging
import queue
import threading
from collections import deque
from collections.abc import Callable
from typing import Protocol

from sidecar.errors import StorageFault, Unavailable
from sidecar.store.contract import SqlStore

log = logging.getLogger(__name__)

Job = Callable[[], None]

# Jobs queued at once are written in one transaction (one commit) of at most this many.
MAX_GROUP = 64
MAX_HELD = 10_000
RETRY_S = 1.0


class Writer(Protocol):
    def submit(self, job: Job) -> None: ...

    def flush(self) -> None: ...

    def close(self) -> None: ...


class WriteThrough:
    def __init__(self, db: SqlStore) -> None:
        self.db = db

    def submit(self, job: Job) -> None:
        with self.db.transaction():
            job()

    def flush(self) -> None:
        """Nothing is ever pending."""

    def close(self) -> None:
        """Nothing to stop."""


class WriteBehind:
    def __init__(self, db: SqlStore, max_pending: int = 256, name: str = "write-behind") -> None:
        self.db = db
        self.failures = 0
        self._held: deque[Job] = deque(maxlen=MAX_HELD)  # met a store away; run again
        self._queue: queue.Queue[Job | None] = queue.Queue(max_pending)
        self._closed = False
        self._close_lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def submit(self, job: Job) -> None:
        with self._close_lock:
            if not self._closed:
                self._queue.put(job)
                return
        # A straggler after close: written now, not lost, and after everything queued before.
        self._thread.join()
        WriteThrough(self.db).submit(job)

    @property
    def depth(self) -> int:
        """Jobs queued, not yet written."""
        return self._queue.qsize()

    def flush(self) -> None:
        self._queue.join()
        if self._held:  # a job of no work of its own runs them again
            self.submit(_no_job)
            self._queue.join()

    def close(self) -> None:
        """Run every queued job, then stop the thread. Idempotent."""
        with self._close_lock:
            if self._closed:
                return
            self._closed = True
            self._queue.put(None)
        self._thread.join()

    def _run(self) -> None:
        while True:
            try:
                jobs = self._take()
            except queue.Empty:
                self._write([], quiet=True)  # the held jobs again
                continue
            stop = jobs[-1] is None
            try:
                self._write([job for job in jobs if job is not None])
            finally:
                for _ in jobs:
                    self._queue.task_done()
            if stop:
                return

    def _take(self) -> list[Job | None]:
        """The next job, with those queued behind it (up to ``MAX_GROUP``; the stop marker
        ends a group). queue.Empty after ``RETRY_S`` when held jobs wait."""
        jobs = [self._queue.get(timeout=RETRY_S if self._held else None)]
        while jobs[-1] is not None and len(jobs) < MAX_GROUP:
            try:
                jobs.append(self._queue.get_nowait())
            except queue.Empty:
                break
        return jobs

    def _write(self, jobs: list[Job], quiet: bool = False) -> None:
        """The held jobs, then ``jobs``: one commit, each job in a savepoint of its own, so a
        failing job is rolled back alone. ``quiet``: a retry of held jobs only (said when
        they were first held)."""
        jobs = [*self._held, *jobs]
        self._held.clear()
        if not jobs:
            return
        try:
            with self.db.transaction():
                for job in jobs:
                    try:
                        with self.db.transaction():
                            job()
                    except (Unavailable, StorageFault):
                        raise
                    except Exception:
                        self._failed(1)
        except Unavailable as err:
            self._held.extend(jobs)
            if not quiet:
                log.warning("store away: deferred writes held until it is back",
                            extra={"held": len(self._held), "error": err.message})
        except StorageFault:  # logged (once a minute) and counted where the disk refused it
            self.failures += len(jobs)
        except Exception:  # the commit itself
            self._failed(len(jobs))

    def _failed(self, jobs: int) -> None:
        self.failures += jobs
        log.exception("a deferred write failed and was rolled back: the store misses it (the "
                      "in-memory state has it) until a later write or a restart",
                      extra={"failures": self.failures})


def _no_job() -> None:
    """Submitted by ``flush`` so the held jobs run again."""
