"""The change feed reader: applies other sidecars' committed writes to this one's indexes.

Every change of a memory or an edge appends a ``changes`` row (migration 2's trigger) with
its writing transaction's id (``xid``, migration 10). Writes into different scopes run at
once (``scope_locks``), so rows commit out of seq order: seq n may commit after n + 1, and a
reader resuming after the last seq it saw would skip n for good. The feed instead remembers
the snapshot of its last read (``pg_current_snapshot``: the transactions then in progress,
and the first one not yet started) and reads the rows of exactly the transactions that
snapshot did not see: those then in progress or started since. Each committed transaction's
rows are seen first by one read, so each change is handed on once, however the commits
interleave, and a read costs what committed since the last one (a transaction left open for
hours holds nothing back). A channel's state deleted (a reset, an erasure) appends a row too
(migration 11's trigger) naming the channel by the SHA-256 of its id: ``on_channels`` gets
those digests, so the other sidecars drop their memory copies of it. A user's erasure
appends one naming the user by digest (migration 12, ``scope_keys.user_digest``):
``on_users`` gets those, so the turns of that user kept through an outage are dropped.
A thread LISTENs for ``memsidecar_changes`` and, on each wake-up (or every ``poll_s`` if a
notification was missed), hands the new rows to the ``Follower``, skipping this process's
own (its indexes already have them); a write transaction does the same once it holds its
scopes. After a reconnect or a restart it resumes from its snapshot. When rows it has not
read were already deleted by retention, the follower reloads in full and ``on_channels``
gets None (every channel's copy is dropped).
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
PRUNED_KEY = "feed.pruned_xid"  # the newest transaction of a row retention deleted
BATCH = 1000  # changes handed to the follower at once
PRUNE_EVERY_S = 60.0


@dataclass(frozen=True, slots=True)
class Snapshot:
    """What a read saw: every transaction below ``xmax`` not in ``running`` had finished."""

    xmin: int
    xmax: int
    running: tuple[int, ...]

    @classmethod
    def parse(cls, text: str) -> Snapshot:
        """``pg_snapshot``'s text: 'xmin:xmax:xip,xip,...'."""
        xmin, xmax, running = text.split(":")
        return cls(int(xmin), int(xmax), tuple(int(x) for x in running.split(",") if x))


@dataclass(frozen=True, slots=True)
class Change:
    seq: int
    memory_id: str | None  # a memory row changed
    edge: tuple[str, str, int] | None  # (source_id, target_id, relation) changed
    channel: str | None = None  # a channel's state deleted: sha256(channel_id), hex
    erased_user: str | None = None  # a user erased: ``scope_keys.user_digest``


# Channels' states deleted by other sidecars, by the SHA-256 of their ids (hex; None: any
# channel may have been).
ChannelsGone = Callable[[Sequence[str] | None], object]
# Users other sidecars erased, by ``scope_keys.user_digest``.
UsersGone = Callable[[Sequence[str]], object]


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
        self.seen = Snapshot(0, 0, ())  # the last read's: the rows it saw are handed on
        self.reloads = 0
        self.connected = False  # the LISTEN connection is up
        self.on_status: Callable[[bool], None] = lambda connected: None
        self.on_channels: ChannelsGone = lambda digests: None
        self.on_users: UsersGone = lambda digests: None
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._pruned_at = 0.0

    def watermark(self) -> Snapshot:
        """The store's snapshot now: a load that starts after reading it covers the rows it
        sees; the feed hands on the others."""
        row = self.db.query_one("SELECT pg_current_snapshot()::text")
        assert row is not None
        return Snapshot.parse(str(row[0]))

    def start(self, after: Snapshot) -> None:
        self.seen = after
        self._thread = threading.Thread(target=self._run, name="change-feed", daemon=True)
        self._thread.start()

    def catch_up(self) -> int:
        """Hand on every change committed since the last read, each once; the number handed
        on."""
        with self.follower.paused(), self._lock:
            while True:
                # One statement, one snapshot, one round trip: its first row is the snapshot
                # and the newest transaction of a row retention deleted, then the rows of the
                # transactions the last read did not see (then running, or started since).
                rows = self.db.execute(
                    "SELECT 0, 0, 0, pg_current_snapshot()::text, (SELECT value FROM meta "
                    "WHERE key = ?), NULL, NULL, NULL, NULL, NULL UNION ALL "
                    "SELECT 1, xid, seq, origin, memory_id, source_id, target_id, relation, "
                    "channel, erased_user FROM changes "
                    "WHERE xid >= ? OR xid = ANY(?) ORDER BY 1, 2, 3",
                    (PRUNED_KEY, self.seen.xmax, list(self.seen.running)))
                if not self._missed(-1 if rows[0][4] is None else int(rows[0][4])):
                    break
                self._reload()  # then read again from the reload's snapshot
            now = Snapshot.parse(str(rows[0][3]))
            changes = [_change(r) for r in rows[1:] if r[3] != self.db.origin]
            channels = [c.channel for c in changes if c.channel is not None]
            users = [c.erased_user for c in changes if c.erased_user is not None]
            if channels or users:
                changes = [c for c in changes if c.channel is None and c.erased_user is None]
            if channels:
                self.on_channels(channels)
            if users:
                self.on_users(users)
            for at in range(0, len(changes), BATCH):
                self.follower.apply(changes[at : at + BATCH])
            self.seen = now  # (an apply that raised leaves the rows to the next read)
            return len(changes) + len(channels) + len(users)

    def not_reset(self, digest: str) -> tuple[str, tuple[object, ...]]:
        """A condition (and its parameters) that holds while no other sidecar deleted the
        state of the channel of ``digest`` in a transaction the last read did not see: a
        reset it saw was handed to ``on_channels`` before this read's snapshot was kept."""
        return self._unseen("channel = ?", digest)

    def not_erased(self, digest: str) -> tuple[str, tuple[object, ...]]:
        """As ``not_reset``, for the user of ``digest`` (``scope_keys.user_digest``) and
        ``on_users``."""
        return self._unseen("erased_user = ?", digest)

    def _unseen(self, which: str, digest: str) -> tuple[str, tuple[object, ...]]:
        seen = self.seen
        return (f"NOT EXISTS (SELECT 1 FROM changes WHERE {which} AND origin <> ? AND "
                "(xid >= ? OR xid = ANY(?)))",
                (digest, self.db.origin, seen.xmax, list(seen.running)))

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
        """Delete changes older than the retention of transactions older than every one
        running; record the newest transaction of one."""
        cutoff = int((time.time() - self.retention_s) * 1_000_000)
        self.db.execute(
            "WITH gone AS (DELETE FROM changes WHERE at < ? AND "
            "xid < pg_snapshot_xmin(pg_current_snapshot())::text::bigint RETURNING xid) "
            "INSERT INTO meta (key, value) SELECT ?, max(xid)::text FROM gone "
            "HAVING count(*) > 0 ON CONFLICT (key) DO UPDATE SET value = "
            "greatest(meta.value::bigint, excluded.value::bigint)::text", (cutoff, PRUNED_KEY))

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()

    def _reload(self) -> None:
        mark = self.watermark()
        log.warning("change feed gap older than the retention: reloading the store",
                    extra={"seen_xmin": self.seen.xmin, "watermark_xmin": mark.xmin})
        self.follower.reload()
        self.on_channels(None)
        self.seen = mark
        self.reloads += 1

    def _missed(self, pruned: int) -> bool:
        """Whether a row deleted by retention may not have been read: one of a transaction
        the last read did not see (conservative: the deleted ones are all before
        ``pruned``, and each had finished before every transaction then running, so once
        a read sees past them this never holds again)."""
        return pruned >= self.seen.xmax or any(x <= pruned for x in self.seen.running)

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
    """A row of (1, xid, seq, origin, memory_id, source_id, target_id, relation, channel,
    erased_user)."""
    edge = None if row[5] is None else (str(row[5]), str(row[6]), int(row[7]))
    return Change(seq=int(row[2]), memory_id=row[4], edge=edge,
                  channel=None if row[8] is None else str(row[8]),
                  erased_user=None if row[9] is None else str(row[9]))


def _closed(conn: psycopg.Connection[Any] | None) -> None:
    if conn is not None:
        conn.close()
