"""WAL checkpoints run on their own thread, off the committing call; the WAL stays bounded."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from sidecar.store import db as db_module
from sidecar.store.db import Database
from tests.waiting import wait_for

PAGE = 4096


def _write(db: Database, transactions: int, rows: int = 10) -> None:
    for _ in range(transactions):
        with db.transaction():
            db.executemany("INSERT INTO t (x) VALUES (?)",
                           [(os.urandom(3000),) for _ in range(rows)])


def test_checkpointer_thread_backfills_the_database(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(db_module, "CHECKPOINT_PAGES", 50)
    path = tmp_path / "c.sqlite3"
    db = Database(path)
    db.execute("CREATE TABLE t (x BLOB)")
    before = path.stat().st_size
    _write(db, 10)  # ~100 pages in the WAL
    wait_for(lambda: path.stat().st_size > before + 50 * PAGE)  # pages copied by the thread
    assert db.query_one("SELECT count(*) FROM t") == (100,)
    db.close()
    again = Database(path)
    assert again.query_one("SELECT count(*) FROM t") == (100,)
    again.close()


def test_wal_bounded_when_writes_outrun_the_thread(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(db_module, "CHECKPOINT_PAGES", 10**9)  # the thread never runs
    monkeypatch.setattr(db_module, "CHECKPOINT_INLINE_PAGES", 100)
    path = tmp_path / "b.sqlite3"
    db = Database(path)
    db.execute("CREATE TABLE t (x BLOB)")
    _write(db, 60)  # ~600 pages written in all
    wal = Path(str(path) + "-wal").stat().st_size // PAGE
    assert wal <= 100 + 2 * 10 + 10, wal
    assert db.query_one("SELECT count(*) FROM t") == (600,)
    db.close()


def test_a_transaction_that_reads_first_still_writes_after_a_wal_purge(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The purge's TRUNCATE checkpoint (another connection) restarts the WAL; a transaction
    that began by reading must neither lose its write nor fail it as 'database is locked'."""
    monkeypatch.setattr(db_module, "PURGE_BUSY_MS", 50)
    db = Database(tmp_path / "p.sqlite3")
    db.execute("CREATE TABLE t (x INTEGER)")
    db.execute("INSERT INTO t (x) VALUES (1)")
    assert db.purge_wal()  # the WAL is fully backfilled: a new reader reads the file
    with db.transaction():
        assert db.query_one("SELECT count(*) FROM t") == (1,)
        db.purge_wal()  # a purge from the scrub thread, mid-transaction
        db.execute("INSERT INTO t (x) VALUES (2)")
    assert db.query_one("SELECT count(*) FROM t") == (2,)
    db.close()


def test_a_failed_transaction_leaves_nothing_and_the_next_one_commits(tmp_path: Path) -> None:
    db = Database(tmp_path / "r.sqlite3")
    db.execute("CREATE TABLE t (x INTEGER)")
    with pytest.raises(RuntimeError), db.transaction():
        db.execute("INSERT INTO t (x) VALUES (1)")
        raise RuntimeError("boom")
    with db.transaction():
        with db.transaction():  # nested: a savepoint
            db.execute("INSERT INTO t (x) VALUES (2)")
    assert db.query_one("SELECT x FROM t") == (2,)
    db.close()
