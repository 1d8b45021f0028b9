"""The change feed hands on every change once when rows commit out of seq order (writes into
different scopes run at once): two real transactions on their own connections, the later
seq committed first, the feed read in between."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, nullcontext

import psycopg
import pytest

from sidecar.store.postgres.db import PgDatabase
from sidecar.store.postgres.feed import Change, ChangeFeed, Snapshot


class Recorder:
    """A follower that records what it is handed."""

    def __init__(self) -> None:
        self.applied: list[str] = []
        self.reloads = 0

    def paused(self) -> AbstractContextManager[None]:
        return nullcontext()

    def apply(self, changes: Sequence[Change]) -> None:
        self.applied += [c.memory_id for c in changes if c.memory_id is not None]

    def reload(self) -> None:
        self.reloads += 1


@pytest.fixture
def db(pg_dsn: str) -> Iterator[PgDatabase]:
    opened = PgDatabase(pg_dsn)
    yield opened
    opened.close()


def feed_of(db: PgDatabase) -> tuple[ChangeFeed, Recorder]:
    recorder = Recorder()
    feed = ChangeFeed(db, recorder, retention_s=86_400.0)
    feed.seen = feed.watermark()
    return feed, recorder


def begin(dsn: str) -> psycopg.Connection[tuple[object, ...]]:
    conn = psycopg.connect(dsn)  # not autocommit: a transaction until commit()
    conn.execute("SELECT 1")
    return conn


def write(conn: psycopg.Connection[tuple[object, ...]], memory_id: str) -> int:
    """Insert a memory (the trigger adds its change row); the change's seq."""
    conn.execute("INSERT INTO memories (id, content, type, importance, created_at, updated_at, "
                 "embedding) VALUES (%s, 'x', 1, 0.5, 1, 1, '\\x00')", (memory_id,))
    row = conn.execute("SELECT max(seq) FROM changes WHERE memory_id = %s",
                       (memory_id,)).fetchone()
    assert row is not None
    return int(row[0])


def xid(conn: psycopg.Connection[tuple[object, ...]]) -> int:
    row = conn.execute("SELECT pg_current_xact_id()::text::bigint").fetchone()
    assert row is not None
    return int(row[0])


def test_a_later_seq_committed_first_is_handed_on_and_the_earlier_after(
        db: PgDatabase, pg_dsn: str) -> None:
    feed, seen = feed_of(db)
    t1, t2 = begin(pg_dsn), begin(pg_dsn)
    try:
        first = write(t1, "m1")
        second = write(t2, "m2")
        assert second > first and xid(t2) > xid(t1)
        t2.commit()
        assert feed.catch_up() == 1 and seen.applied == ["m2"]  # t1 still runs
        assert feed.catch_up() == 0  # not handed on again
        t1.commit()
        assert feed.catch_up() == 1 and seen.applied == ["m2", "m1"]
        assert feed.catch_up() == 0
    finally:
        t1.close()
        t2.close()


def test_an_older_transaction_with_a_later_seq_never_hides_an_earlier_seq(
        db: PgDatabase, pg_dsn: str) -> None:
    """t2 has the older transaction id and the later seq: a reader resuming after the last
    seq it saw would skip t1's row (seq n) for good once t2's (n + 1) was read."""
    feed, seen = feed_of(db)
    t1, t2 = begin(pg_dsn), begin(pg_dsn)
    try:
        older = xid(t2)  # t2's transaction id is taken first
        first = write(t1, "m1")
        second = write(t2, "m2")
        assert second > first and older < xid(t1)
        t2.commit()
        assert feed.catch_up() == 1 and seen.applied == ["m2"]
        t1.commit()
        assert feed.catch_up() == 1 and seen.applied == ["m2", "m1"]
        assert feed.catch_up() == 0
    finally:
        t1.close()
        t2.close()


def test_a_rolled_back_write_leaves_no_hole(db: PgDatabase, pg_dsn: str) -> None:
    feed, seen = feed_of(db)
    t1, t2 = begin(pg_dsn), begin(pg_dsn)
    try:
        write(t1, "gone")
        write(t2, "kept")
        t2.commit()
        assert feed.catch_up() == 1
        t1.rollback()
        t1.close()
        t3 = begin(pg_dsn)
        write(t3, "later")
        t3.commit()
        t3.close()
        assert feed.catch_up() == 1 and seen.applied == ["kept", "later"]
    finally:
        t2.close()
    assert seen.reloads == 0


def test_many_interleaved_writers_hand_on_each_change_once(db: PgDatabase, pg_dsn: str) -> None:
    """Six transactions commit in an order unrelated to their seqs and ids, with the feed
    read after every commit: every row is handed on, each once."""
    feed, seen = feed_of(db)
    conns = [begin(pg_dsn) for _ in range(6)]
    try:
        xid(conns[4])  # one older transaction id that writes late
        for n in (0, 3, 4, 1, 5, 2):
            write(conns[n], f"m{n}")
        for n in (5, 1, 3, 0, 4, 2):
            conns[n].commit()
            feed.catch_up()
    finally:
        for conn in conns:
            conn.close()
    assert sorted(seen.applied) == [f"m{n}" for n in range(6)]
    assert len(seen.applied) == 6


def test_a_restart_resumes_from_the_watermark_without_skipping(db: PgDatabase,
                                                               pg_dsn: str) -> None:
    """A watermark read while a write runs: that write is handed on once it commits."""
    t1 = begin(pg_dsn)
    try:
        write(t1, "m1")
        feed, seen = feed_of(db)
        t1.commit()
    finally:
        t1.close()
    assert feed.catch_up() == 1 and seen.applied == ["m1"]


def test_a_transaction_left_open_never_makes_the_feed_reload_over_and_over(
        db: PgDatabase, pg_dsn: str) -> None:
    """Retention deletes only rows of transactions older than every one running; the rows
    it deleted while a read's snapshot still had one running reload once, not each read."""
    feed, seen = feed_of(db)
    feed.retention_s = 0
    idle = begin(pg_dsn)
    try:
        xid(idle)  # an open transaction with an id (an operator's forgotten session)
        t1 = begin(pg_dsn)
        write(t1, "m1")
        t1.commit()
        t1.close()
        assert feed.catch_up() == 1
        feed.prune()  # m1's transaction is younger than the open one: kept
        assert feed.catch_up() == 0 and seen.reloads == 0
        idle.commit()
    finally:
        idle.close()
    feed.prune()  # now deleted, while the last read had the open one running
    feed.catch_up()
    feed.catch_up()
    assert seen.reloads == 1 and seen.applied == ["m1"]


def test_a_snapshot_is_read_from_its_text() -> None:
    assert Snapshot.parse("10:14:") == Snapshot(10, 14, ())
    assert Snapshot.parse("10:14:10,12") == Snapshot(10, 14, (10, 12))
