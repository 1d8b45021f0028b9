"""The change feed reader: applies other sidecars' committed writes to this one's indexes.

Every change of a memory or an edge appends a ``changes`` row (migration 2's trigger) with
its seq and its writing transaction's id (``xid``, migration 10). Writes into different
scopes run at once (``scope_locks``), so rows commit out of seq order: seq n may commit after
n + 1. The feed's position is therefore the (xid, seq) of the last row it passed, and it
passes a row only once its transaction is older than every one still in progress
(``pg_snapshot_xmin``): no row can commit before such a position any more. A row committed
after a transaction still in progress (a write gate must see it now) is handed on at once
and remembered by seq until the position passes it, so it is handed on once. A thread
LISTENs for ``memsidecar_changes`` and, on each wake-up (or every ``poll_s`` if a
notification was missed), hands the rows after the position to the ``Follower``, skipping
this process's own (its indexes already have them). After a reconnect or a restart it
resumes from its position. When rows it has not passed were already deleted by retention,
the follower reloads in full instead.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Collection, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any, Protocol

import psycopg

from sidecar.errors import Unavailable
from sidecar.store.postgres.db import PgDatabase
from sidecar.store.postgres.scope_locks import ScopeKey, lock_statement

log = logging.getLogger(__name__)

CHANNEL = "memsidecar_changes"
PRUNED_KEY = "feed.pruned_position"  # 'xid:seq' of the newest row retention deleted
BATCH = 1000
PRUNE_EVERY_S = 60.0
LAST_SEQ = 2**63 - 1

Position = tuple[int, int]  # (xid, seq) of a change row: the order the feed passes rows in


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
        self.last: Position = (0, 0)  # every row at or before it is handed on (or loaded)
        self.reloads = 0
        self.connected = False  # the LISTEN connection is up
        self.on_status: Callable[[bool], None] = lambda connected: None
        self._ahead: set[Position] = set()  # rows after ``last`` already handed on
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._pruned_at = 0.0

    def watermark(self) -> Position:
        """A position every row before which is committed: a load that starts after reading
        it covers them; every row after it is handed on by the feed."""
        row = self.db.query_one("SELECT pg_snapshot_xmin(pg_current_snapshot())::text::bigint")
        return (int(row[0]) - 1 if row else 0, LAST_SEQ)

    def start(self, after: Position) -> None:
        self.last = after
        self._ahead.clear()
        self._thread = threading.Thread(target=self._run, name="change-feed", daemon=True)
        self._thread.start()

    def catch_up(self) -> int:
        """Hand on every change committed so far, each once; the number handed on."""
        with self.follower.paused(), self._lock:
            if self.last < self._pruned_through():
                self._reload()
            handed = 0
            read = self.last  # the position of the last row read this round
            passing = True  # every row read so far is older than the horizon
            while True:
                rows = self.db.execute(
                    "SELECT xid, seq, origin, memory_id, source_id, target_id, relation, "
                    "pg_snapshot_xmin(pg_current_snapshot())::text::bigint FROM changes "
                    "WHERE (xid, seq) > (?, ?) ORDER BY xid, seq LIMIT ?", (*read, BATCH))
                changes: list[Change] = []
                passed, ahead = self.last, list[Position]()
                for row in rows:
                    xid, seq, mine = int(row[0]), int(row[1]), row[2] == self.db.origin
                    passing = passing and xid < int(row[7])
                    if not mine and (xid, seq) not in self._ahead:
                        changes.append(_change(row))
                    if passing:
                        passed = (xid, seq)
                    elif not mine:
                        ahead.append((xid, seq))
                if changes:
                    self.follower.apply(changes)
                    handed += len(changes)
                self._passed(passed, ahead)
                if rows:
                    read = (int(rows[-1][0]), int(rows[-1][1]))
                if len(rows) < BATCH:
                    return handed

    def exclusive(self, scopes: Collection[ScopeKey] | None = None) -> None:
        """Inside a write transaction into ``scopes`` (None: any scope): wait for every
        other sidecar's write in flight into them (they hold the scopes' locks until they
        commit), then apply every committed change, so write gates (near-duplicates, topics)
        see every row of their scopes and no other write into them lands before this one
        commits. Writes into other scopes neither wait nor are waited for."""
        sql, params = lock_statement(scopes)
        self.db.execute(sql, params)
        self.catch_up()

    def prune(self) -> None:
        """Delete changes older than the retention; record the newest position deleted."""
        cutoff = int((time.time() - self.retention_s) * 1_000_000)
        self.db.execute(
            "WITH gone AS (DELETE FROM changes WHERE at < ? RETURNING xid, seq), "
            "newest AS (SELECT xid, seq FROM gone ORDER BY xid DESC, seq DESC LIMIT 1) "
            "INSERT INTO meta (key, value) SELECT ?, xid || ':' || seq FROM newest "
            "ON CONFLICT (key) DO UPDATE SET value = CASE WHEN "
            "(split_part(meta.value, ':', 1)::bigint, split_part(meta.value, ':', 2)::bigint)"
            " >= (split_part(excluded.value, ':', 1)::bigint, "
            "split_part(excluded.value, ':', 2)::bigint) THEN meta.value "
            "ELSE excluded.value END", (cutoff, PRUNED_KEY))

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()

    def _passed(self, position: Position, ahead: list[Position]) -> None:
        """The rows up to ``position`` are behind; those of ``ahead`` were handed on early."""
        if position != self.last and self._ahead:
            self._ahead = {p for p in self._ahead if p > position}
        self.last = position
        self._ahead.update(ahead)

    def _reload(self) -> None:
        mark = self.watermark()
        log.warning("change feed gap older than the retention: reloading the store",
                    extra={"last_seq": self.last[1], "watermark_xid": mark[0]})
        self.follower.reload()
        self.last = mark
        self._ahead.clear()
        self.reloads += 1

    def _pruned_through(self) -> Position:
        row = self.db.query_one("SELECT value FROM meta WHERE key = ?", (PRUNED_KEY,))
        if row is None:
            return (0, 0)
        xid, seq = str(row[0]).split(":")
        return int(xid), int(seq)

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
    """A row of (xid, seq, origin, memory_id, source_id, target_id, relation, ...)."""
    edge = None if row[4] is None else (str(row[4]), str(row[5]), int(row[6]))
    return Change(seq=int(row[1]), memory_id=row[3], edge=edge)


def _closed(conn: psycopg.Connection[Any] | None) -> None:
    if conn is not None:
        conn.close()
