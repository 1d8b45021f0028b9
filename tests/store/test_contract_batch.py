"""The store contract, batches and guards: one suite, run on SQLite and PostgreSQL.

A batch is a transaction of writes (one round trip to PostgreSQL); a guard is a write that
must change a row, else its error is raised and nothing of the batch is written."""

from __future__ import annotations

import pytest

from sidecar.injection.state_repo import ChannelMoved, StateRepo
from sidecar.store.contract import SqlStore
from sidecar.store.postgres.db import PgDatabase
from tests.store.contract_data import saved_turn

HOSTILE = "100% %s %(x)s ? '; DROP TABLE meta; -- \\ \\x00 é 漢字 $$ E'\\n'"


class Refused(Exception):
    pass


def _meta(db: SqlStore) -> dict[str, str]:
    """The test's rows of ``meta`` (keys not the store's own)."""
    rows = db.execute("SELECT key, value FROM meta WHERE key NOT LIKE 'embedding.%'")
    return {str(k): str(v) for k, v in rows}


def _put(db: SqlStore, key: str, value: str) -> None:
    db.execute("INSERT INTO meta (key, value) VALUES (?, ?)", (key, value))


def test_batch_commits_its_writes_together(store_db: SqlStore) -> None:
    with store_db.batched():
        _put(store_db, "a", "1")
        _put(store_db, HOSTILE, HOSTILE)  # bound client-side on PostgreSQL: escaped
        store_db.guard("UPDATE meta SET value = ? WHERE key = ?", ("2", "a"), Refused())
    assert _meta(store_db) == {"a": "2", HOSTILE: HOSTILE}


def test_failing_guard_writes_nothing_of_the_batch(store_db: SqlStore) -> None:
    with pytest.raises(Refused), store_db.batched():
        _put(store_db, "a", "1")
        store_db.guard("UPDATE meta SET value = ? WHERE key = ?", ("2", "missing"), Refused())
    with pytest.raises(Refused), store_db.batched():  # a conflict changes no row either
        _put(store_db, "b", "1")
        _put(store_db, "c", "1")
        store_db.guard("INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO "
                       "NOTHING", ("b", "x"), Refused())
    assert _meta(store_db) == {}
    with store_db.batched():  # the connection is fine afterwards
        _put(store_db, "d", "1")
    assert _meta(store_db) == {"d": "1"}


def test_batch_left_by_an_exception_writes_nothing(store_db: SqlStore) -> None:
    with pytest.raises(KeyError), store_db.batched():
        _put(store_db, "a", "1")
        raise KeyError("left")
    assert _meta(store_db) == {}


def test_guard_outside_a_batch_and_a_batch_inside_a_transaction(store_db: SqlStore) -> None:
    with pytest.raises(Refused):
        store_db.guard("UPDATE meta SET value = ? WHERE key = ?", ("2", "missing"), Refused())
    with store_db.transaction():
        _put(store_db, "kept", "1")
        with pytest.raises(Refused), store_db.batched():  # a savepoint: rolled back alone
            _put(store_db, "inner", "1")
            store_db.guard("UPDATE meta SET value = ? WHERE key = ?", ("2", "gone"), Refused())
        with store_db.batched():
            store_db.guard("UPDATE meta SET value = ? WHERE key = ?", ("2", "kept"), Refused())
    assert _meta(store_db) == {"kept": "2"}


def test_a_postgres_batch_holds_writes_only(pg_dsn: str) -> None:
    """PostgreSQL sends a batch's statements on exit, so nothing in it can read a result
    (SQLite runs them at once: the contract tests above cover it)."""
    db = PgDatabase(pg_dsn)
    try:
        with pytest.raises(RuntimeError, match="batched"), db.batched():
            db.changes()
        assert _meta(db) == {}
    finally:
        db.close()


def test_a_transaction_inside_a_batch_is_part_of_it(store_db: SqlStore) -> None:
    """All of it committed or none; a block that raises leaves none of its writes."""
    with store_db.batched():
        _put(store_db, "a", "1")
        with pytest.raises(KeyError), store_db.transaction():
            _put(store_db, "dropped", "1")
            raise KeyError("a write that failed before it was sent")
        with store_db.transaction():
            _put(store_db, "b", "1")
    assert _meta(store_db) == {"a": "1", "b": "1"}
    with pytest.raises(Refused), store_db.batched():
        _put(store_db, "c", "1")
        with store_db.transaction():
            store_db.guard("UPDATE meta SET value = ? WHERE key = ?", ("2", "gone"), Refused())
    assert _meta(store_db) == {"a": "1", "b": "1"}


def test_stale_compare_and_swap_writes_none_of_the_turn(store_db: SqlStore) -> None:
    repo = StateRepo(store_db)
    repo.save("c", saved_turn(1, ["a"]), expect=0)
    with pytest.raises(ChannelMoved):  # another sidecar's turn 1 came first
        repo.save("c", saved_turn(1, ["x", "y"]), expect=0)
    repo.save("c", saved_turn(2, ["b"]), expect=1)
    with pytest.raises(ChannelMoved):
        repo.save("c", saved_turn(2, ["z"], held=frozenset()), expect=1)
    loaded = repo.load("c")
    assert loaded is not None and loaded.turn == 2 and loaded.reply == {"turn": 2}
    assert [r.memory_id for r in loaded.buffer] == ["a", "b"]
    assert {r.memory_id for r in loaded.injected} == {"a", "b"}
    assert loaded.blocks == [(1, "digest1"), (2, "digest2")]


def test_reads_together_give_each_reads_rows_in_order(store_db: SqlStore) -> None:
    _put(store_db, "a", "1")
    _put(store_db, HOSTILE, HOSTILE)
    reads = [("SELECT value FROM meta WHERE key = ?", (HOSTILE,)),
             ("SELECT key FROM meta WHERE key = ? OR key = ? ORDER BY key", ("a", HOSTILE)),
             ("SELECT value FROM meta WHERE key = ?", ("none",)),
             ("SELECT count(*) FROM meta WHERE key = ?", ("a",))]
    assert store_db.read_together(reads) == [store_db.execute(sql, p) for sql, p in reads]
    with store_db.transaction():  # in a transaction: its own writes are read
        _put(store_db, "b", "2")
        assert store_db.read_together(reads[:1] + [
            ("SELECT value FROM meta WHERE key = ?", ("b",))]) == [[(HOSTILE,)], [("2",)]]


def test_reads_together_read_one_snapshot_on_postgres(pg_dsn: str) -> None:
    """The reads run in one read-only REPEATABLE READ transaction: one snapshot for all of
    them (on SQLite they hold the one connection's lock: no writer runs between them)."""
    store_db = PgDatabase(pg_dsn)
    try:
        _put(store_db, "seen", "x")
        where = ("SELECT current_setting('transaction_isolation'), "
                 "current_setting('transaction_read_only'), now(), "
                 "pg_current_snapshot()::text", ())
        first, count, last = store_db.read_together(
            [where, ("SELECT count(*) FROM meta WHERE key = ?", ("seen",)), where])
        assert first == last  # the same transaction (now()) and the same snapshot
        assert first[0][:2] == ("repeatable read", "on") and count == [(1,)]
        alone = store_db.execute(where[0])  # a statement of its own: another transaction
        assert alone[0][0] == "read committed"
    finally:
        store_db.close()
