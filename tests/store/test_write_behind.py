"""WriteBehind: order, flush, rollback of a failed job, group commit, close, back-pressure,
late jobs."""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from pathlib import Path

import apsw
import pytest

from sidecar.errors import Unavailable
from sidecar.store.db import Database
from sidecar.store.write_behind import WriteBehind
from tests.waiting import wait_for


@pytest.fixture
def db(tmp_path: Path) -> Iterator[Database]:
    database = Database(tmp_path / "w.sqlite3")
    database.execute("CREATE TABLE t (n INTEGER)")
    yield database
    database.close()


def insert(db: Database, n: int) -> None:
    db.execute("INSERT INTO t (n) VALUES (?)", (n,))


def rows(db: Database) -> list[int]:
    return [r[0] for r in db.execute("SELECT n FROM t ORDER BY rowid")]


def gate(db: Database) -> tuple[WriteBehind, threading.Event, threading.Event]:
    """A writer whose first job holds the thread (and the database) until ``release``."""
    writer = WriteBehind(db, max_pending=2)
    started, release = threading.Event(), threading.Event()

    def hold() -> None:
        started.set()
        release.wait()

    writer.submit(hold)
    started.wait()
    return writer, started, release


def test_jobs_run_in_order_and_flush_waits_for_them(db: Database) -> None:
    writer = WriteBehind(db)
    for n in range(200):
        writer.submit(lambda n=n: insert(db, n))  # type: ignore[misc]
    writer.flush()
    assert rows(db) == list(range(200))
    writer.close()


def test_a_failed_job_is_rolled_back_alone(db: Database,
                                           caplog: pytest.LogCaptureFixture) -> None:
    writer = WriteBehind(db)

    def half_then_fail() -> None:
        insert(db, 1)
        raise RuntimeError("disk said no")

    with caplog.at_level(logging.ERROR, logger="sidecar.store.write_behind"):
        writer.submit(half_then_fail)
        writer.submit(lambda: insert(db, 2))
        writer.flush()
    assert rows(db) == [2] and writer.failures == 1
    assert "a deferred write failed and was rolled back" in caplog.text
    writer.close()


def test_jobs_queued_together_share_one_commit_and_fail_alone(db: Database) -> None:
    writer = WriteBehind(db, max_pending=8)
    started, release = threading.Event(), threading.Event()
    writer.submit(lambda: (started.set(), release.wait()) and None)
    started.wait()
    other = apsw.Connection(str(db.path))  # sees committed rows only
    seen: list[list[int]] = []

    def fail() -> None:
        insert(db, 2)
        raise RuntimeError("disk said no")

    def look() -> None:
        insert(db, 3)
        seen.append([r[0] for r in other.execute("SELECT n FROM t")])

    for job in (lambda: insert(db, 1), fail, look):
        writer.submit(job)
    release.set()
    writer.flush()
    assert seen == [[]]  # 1 was written in the same, still open, transaction
    assert rows(db) == [1, 3] and writer.failures == 1
    other.close()
    writer.close()


def test_close_writes_everything_queued(db: Database) -> None:
    writer, _, release = gate(db)
    writer.submit(lambda: insert(db, 1))
    writer.submit(lambda: insert(db, 2))  # queued behind the held job
    closing = threading.Thread(target=writer.close)
    closing.start()
    wait_for(lambda: writer._closed)  # close() has begun while a job holds the writer
    release.set()
    closing.join()
    assert rows(db) == [1, 2]
    writer.close()  # idempotent


def test_submit_blocks_when_max_pending_jobs_wait(db: Database) -> None:
    writer, _, release = gate(db)
    writer.submit(lambda: insert(db, 1))
    writer.submit(lambda: insert(db, 2))  # the queue (2) is now full
    third = threading.Thread(target=writer.submit, args=(lambda: insert(db, 3),))
    third.start()
    third.join(0.2)
    assert third.is_alive()  # back-pressure: held until the writer drains
    release.set()
    third.join()
    writer.close()
    assert rows(db) == [1, 2, 3]


def test_a_job_submitted_while_closing_lands_after_the_queued_ones(db: Database) -> None:
    writer, _, release = gate(db)
    writer.submit(lambda: insert(db, 1))
    closing = threading.Thread(target=writer.close)
    closing.start()
    wait_for(lambda: writer._closed)  # close() has begun: later jobs take the straggler path
    late = threading.Thread(target=writer.submit, args=(lambda: insert(db, 2),))
    late.start()
    release.set()
    closing.join()
    late.join()
    assert rows(db) == [1, 2]


def test_a_job_after_close_is_written_at_once(db: Database) -> None:
    writer = WriteBehind(db)
    writer.close()
    writer.submit(lambda: insert(db, 7))
    assert rows(db) == [7]


def test_held_jobs_run_again_when_the_store_is_back_without_a_new_job(db: Database) -> None:
    """A job that met a store away is retried alone (each RETRY_S), and by ``flush``."""
    away = threading.Event()
    away.set()
    original = db.transaction

    def transaction():  # type: ignore[no-untyped-def]
        if away.is_set():
            raise Unavailable("the store is away")
        return original()

    db.transaction = transaction  # type: ignore[method-assign]
    writer = WriteBehind(db)
    writer.submit(lambda: insert(db, 1))
    writer.flush()
    assert rows(db) == []  # held
    away.clear()
    wait_for(lambda: rows(db) == [1])  # no new job: the periodic retry writes it
    away.set()
    writer.submit(lambda: insert(db, 2))
    writer.flush()
    assert rows(db) == [1]
    away.clear()
    writer.flush()  # retries the held job at once
    assert rows(db) == [1, 2]
    writer.close()
