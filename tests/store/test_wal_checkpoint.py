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
