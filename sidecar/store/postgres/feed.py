"""The change feed reader: applies other sidecars' committed writes to this one's indexes.

Every change of a memory or an edge appends a ``changes`` row (migration 2's trigger) in
commit order. ``ChangeFeed`` keeps the seq of the last row it handed on; a thread LISTENs for
``memsidecar_changes`` and, on each wake-up (or every ``poll_s`` if a notification was
missed), hands the rows after it to the ``Follower``, skipping this process's own (its
indexes already have them). After a reconnect or a restart it resumes by seq. When rows it
has not read were already deleted by retention, the follower reloads in full instead.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any, Protocol

import psycopg

from sidecar.errors import Unavailable
from sidecar.store.postgres.db import FEED_LOCK, PgDatabase

log = logging.getLogger(__name__)

CHANNEL = "memsidecar_changes"
PRUNED_KEY = "feed.pruned_through"
BATCH = 1000
PRUNE_EVERY_S = 60.0


@dataclass(frozen=True, slots=True)
class Change:
    seq: int
    memory_id: str | None  # a memory row changed
    edge: tuple[str, str, int] | None  # (source_id, target_id, relation) changed


class Follower(Protocol):
    def paused(self) -> AbstractContextManager[None]:
        """No local write runs inside (taken before the feed's own lock, as writers do)."""
        ...

    def apply(self, changes: Sequence[Change]) -> None:
        """Bring the indexes up to the store's current rows for these changes."""
        ...

    def reload(self) -> None:
        """Bring the indexes up to the whole store (a gap the feed no longer covers)."""
        ...


class ChangeFeed:
    def __init__(self, db: PgDatabase, follower: Follower, retention_s: float,
                 poll_s: float = 0.5) -> None:
        self.db = db
        self.follower = follower
        self.retention_s = retention_s
        self.poll_s = poll_s
        self.last = 0  # seq of the last change handed on (or covered by a load)
        self.reloads = 0
        self.connected = False  # the LISTEN connection is up
        self.on_status: Callable[[bool], None] = lambda connected: None
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._pruned_at = 0.0

    def watermark(self) -> int:
        """The newest committed change: a load that starts after reading it covers it."""
        row = self.db.query_one("SELECT coalesce(max(seq), 0) FROM changes")
        return int(row[0]) if row else 0

    def start(self, after: int) -> None:
        self.last = after
        self._thread = threading.Thread(target=self._run, name="change-feed", daemon=True)
        self._thread.start()

    def catch_up(self) -> int:
        """Hand on every change committed so far; the number handed on."""
        with self.follower.paused(), self._lock:
            if self.last < self._pruned_through():
                self._reload()
            handed = 0
            while True:
                rows = self.db.execute(
                    "SELECT seq, origin, memory_id, source_id, target_id, relation "
                    "FROM changes WHERE seq > ? ORDER BY seq LIMIT ?", (self.last, BATCH))
                changes = [_change(r) for r in rows if r[1] != self.db.origin]
                if changes:
                    self.follower.apply(changes)
                    handed += len(changes)
                if rows:
                    self.last = int(rows[-1][0])
                if len(rows) < BATCH:
                    return handed

    def exclusive(self) -> None:
        """Inside a write transaction: wait for every other sidecar's write in flight (they
        hold FEED_LOCK until they commit), then apply them, so write gates (near-duplicates,
        topics) see every committed row and no other write lands before this one commits."""
        self.db.execute("SELECT pg_advisory_xact_lock(?)", (FEED_LOCK,))
        self.catch_up()

    def prune(self) -> None:
        """Delete changes older than the retention; record the newest seq deleted."""
        cutoff = int((time.time() - self.retention_s) * 1_000_000)
        self.db.execute(
            "WITH gone AS (DELETE FROM changes WHERE at < ? RETURNING seq) "
            "INSERT INTO meta (key, value) SELECT ?, max(seq)::text FROM gone "
            "HAVING count(*) > 0 ON CONFLICT (key) DO UPDATE SET value = "
            "greatest(meta.value::bigint, excluded.value::bigint)::text", (cutoff, PRUNED_KEY))

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()

    def _reload(self) -> None:
        mark = self.watermark()
        log.warning("change feed gap older than the retention: reloading the store",
                    extra={"last_seq": self.last, "watermark": mark})
        self.follower.reload()
        self.last = mark
        self.reloads += 1

    def _pruned_through(self) -> int:
        row = self.db.query_one("SELECT value FROM meta WHERE key = ?", (PRUNED_KEY,))
        return 0 if row is None else int(row[0])

    def _run(self) -> None:
        conn: psycopg.Connection[Any] | None = None
        while not self._stop.is_set():
            try:
                if conn is None:
                    conn = self.db.listener()
                    conn.execute(f"LISTEN {CHANNEL}")
                    if not self.connected:
                        self.db.recovered()
                    self._connected(True)
                self.catch_up()
                if time.monotonic() - self._pruned_at > PRUNE_EVERY_S:
                    self._pruned_at = time.monotonic()
                    self.prune()
                for _ in conn.notifies(timeout=self.poll_s, stop_after=1):
                    pass
            except (Unavailable, psycopg.Error) as err:
                if self.connected:
                    log.warning("change feed interrupted; retrying every second",
                                extra={"error": str(err)})
                self._connected(False)
                _closed(conn)
                conn = None
                self._stop.wait(1.0)
            except Exception:  # a bug must not stop the following for good
                log.exception("change feed failed; retrying")
                self._stop.wait(1.0)
        _closed(conn)


    def _connected(self, connected: bool) -> None:
        if connected != self.connected:
            self.connected = connected
            self.on_status(connected)


def _change(row: tuple[Any, ...]) -> Change:
    edge = None if row[3] is None else (str(row[3]), str(row[4]), int(row[5]))
    return Change(seq=int(row[0]), memory_id=row[2], edge=edge)


def _closed(conn: psycopg.Connection[Any] | None) -> None:
    if conn is not None:
        conn.close()
