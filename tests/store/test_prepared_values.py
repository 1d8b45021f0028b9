"""A batch of EXECUTEs against the same batch sent plainly, statement by statement, for values
whose type differs from the one the server infers for their parameter: the same rows, the same
error."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import ExitStack
from typing import Any

import numpy as np
import psycopg
import pytest

from sidecar.injection.state_repo import ChosenErased, StateRepo
from sidecar.records import Memory, MemoryType
from sidecar.store.memories import MemoryRepo
from sidecar.store.postgres.db import PgDatabase
from sidecar.store.postgres.prepared import PREFIX, PreparedStatements
from sidecar.store.versions import VersionRepo
from tests.store.contract_data import saved_turn

TABLE = ("CREATE TABLE probe (id BIGINT PRIMARY KEY, t TEXT, n BIGINT, i INTEGER, "
         "f DOUBLE PRECISION, b BYTEA)")
ROWS = [(1, "1", 1, 1, 1.0, b"1"), (2, "2", 2, 2, 2.0, b"2"), (3, "", 3, 0, 1.5, b""),
        (4, None, None, None, None, None)]
LONG = "long ' text \\ " * 20_000
VALUES: list[Any] = [
    None, 0, 1, -1, 2, 2**31, 2**63 - 1, 2**63, 1.5, 2.5, -0.0, float("inf"), float("nan"),
    True, False, "", "2", " 2", "1.5", "abc", "x$1", "?", "%", "%s", "$1::int",
    "'; DROP TABLE probe; --",
    "é\u2028😀", LONG, b"", b"a\x00b", b"\\x00", bytearray(b"2"),
]
STATEMENTS = [
    "INSERT INTO probe (id, t) VALUES (10, ?)",
    "INSERT INTO probe (id, n) VALUES (10, ?)",
    "INSERT INTO probe (id, i) VALUES (10, ?)",
    "INSERT INTO probe (id, f) VALUES (10, ?)",
    "INSERT INTO probe (id, b) VALUES (10, ?)",
    "UPDATE probe SET t = ? WHERE id = 1",
    "UPDATE probe SET n = n + ? WHERE id = 1",
    "UPDATE probe SET f = f * ? WHERE id = 1",
    "DELETE FROM probe WHERE t = ?",
    "DELETE FROM probe WHERE n = ?",
    "DELETE FROM probe WHERE i = ?",
    "DELETE FROM probe WHERE f = ?",
    "DELETE FROM probe WHERE b = ?",
    "DELETE FROM probe WHERE n < ?",
    "DELETE FROM probe WHERE t LIKE ?",
    "UPDATE probe SET t = coalesce(?, 'none')",
    "UPDATE probe SET t = t || ?",
    "UPDATE probe SET n = length(?)",
    "INSERT INTO probe (id, t) SELECT 10, ? WHERE EXISTS (SELECT 1 FROM probe)",
    "INSERT INTO probe (id, n) SELECT 10, ? WHERE EXISTS (SELECT 1 FROM probe)",
    "UPDATE probe SET t = CASE WHEN id = 1 THEN ? ELSE t END",
    "UPDATE probe SET n = greatest(n, ?)",
    "DELETE FROM probe WHERE id IN (SELECT ?)",
]


@pytest.fixture(scope="module")
def stores(pg_cluster: Any) -> Iterator[tuple[PgDatabase, PgDatabase]]:
    prepared, plain = PgDatabase(pg_cluster.new_database()), PgDatabase(pg_cluster.new_database())
    plain.prepared = PreparedStatements(0)
    for db in (prepared, plain):
        db.execute(TABLE)
    yield prepared, plain
    prepared.close()
    plain.close()


def _outcome(db: PgDatabase, sql: str, value: Any) -> object:
    db.execute("DELETE FROM probe")
    db.executemany("INSERT INTO probe VALUES (?, ?, ?, ?, ?, ?)", ROWS)
    try:
        with db.batched():
            db.execute("UPDATE probe SET i = i WHERE id = ?", (1,))
            db.execute(sql, (value,))
    except psycopg.Error as err:
        return type(err).__name__, err.sqlstate
    return repr(db.execute("SELECT * FROM probe ORDER BY id"))  # NaN equal to NaN


@pytest.mark.parametrize("sql", STATEMENTS)
def test_a_value_gives_what_it_gives_plainly(stores: tuple[PgDatabase, PgDatabase],
                                             sql: str) -> None:
    prepared, plain = stores
    differ = []
    for value in VALUES:
        for _ in range(2):  # prepared by the first, kept for the second
            got, want = _outcome(prepared, sql, value), _outcome(plain, sql, value)
            if got != want:
                differ.append((repr(value)[:30], str(got)[:200], str(want)[:200]))
    assert not differ


def test_a_turns_commit_is_sent_as_executes(pg_dsn: str) -> None:
    """The values the store writes (strings, ints, floats, bytes, NULLs in their own columns)
    go as EXECUTEs, once the texts are prepared: every statement with parameters, the
    erasure locks and the check of the memories the turn chose (decision 0047) too."""
    db = PgDatabase(pg_dsn)
    try:
        chosen = [Memory(id=f"m{n}", content="x", type=MemoryType.FACT, importance=0.5,
                         created_at=1, updated_at=1, last_accessed_at=0, access_count=0,
                         source="", channel_id="", forgotten=False, version=1,
                         agent_id="a", user_id=user) for n, user in ((1, ""), (2, "u"))]
        memories = MemoryRepo(db, VersionRepo(db))
        memories.insert_many(chosen, np.ones((2, 384), np.float32))
        sent: list[list[tuple[str, Any]]] = []
        send = db._send

        def capture(batch: Any) -> None:
            sent.append(list(batch.statements))
            send(batch)

        db._send = capture  # type: ignore[method-assign]
        repo = StateRepo(db)
        for turn in (1, 2):
            with db.batched():
                memories.still_there(chosen, ChosenErased("c"))
                repo.save("c", saved_turn(turn, ["m1", "m2"], None), expect=turn - 1)
        assert sent[-1][0][0].startswith("SELECT pg_advisory_xact_lock_shared")
        with db._pool.connection() as conn:
            composed = db.prepared.compose(conn, sent[-1])
        lines = composed.text.split(b"\n;\n")[1:]
        assert composed.executes and len(lines) == len(sent[-1])
        for (sql, params), line in zip(sent[-1], lines, strict=True):
            assert line.startswith(b"EXECUTE ") == bool(params), sql
    finally:
        db.close()


def test_threads_sharing_the_store(pg_dsn: str) -> None:
    """Batches from several threads beside reads on connections of their own (the pool hands
    a connection to one thread, then another): every write, and what each connection holds
    is what the store believes."""
    db = PgDatabase(pg_dsn, max_connections=3)
    texts = [f"UPDATE meta SET value = value || ? WHERE key = ? AND {n} = {n}" for n in range(5)]
    errors: list[BaseException] = []

    def writer(w: int) -> None:
        try:
            for n in range(30):
                with db.batched():
                    db.execute("INSERT INTO meta (key, value) VALUES (?, ?)", (f"{w}.{n}", "v"))
                    db.execute(texts[(w + n) % len(texts)], (str(n % 7), f"{w}.{n}"))
        except BaseException as err:  # noqa: BLE001 - reported by the main thread
            errors.append(err)

    def reader() -> None:
        try:
            for n in range(60):
                db.read_apart("SELECT count(*) FROM meta WHERE key LIKE ?", ("%.%",))
                db.read_together([("SELECT value FROM meta WHERE key = ?", (f"0.{n}",)),
                                  ("SELECT count(*) FROM meta", ())])
        except BaseException as err:  # noqa: BLE001
            errors.append(err)

    try:
        threads = [threading.Thread(target=writer, args=(w,)) for w in range(3)]
        threads += [threading.Thread(target=reader) for _ in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert errors == []
        rows = dict(db.execute("SELECT key, value FROM meta WHERE key LIKE '%.%'"))
        assert rows == {f"{w}.{n}": f"v{n % 7}" for w in range(3) for n in range(30)}
        with ExitStack() as stack:
            for _ in range(db._pool.get_stats()["pool_size"]):
                conn = stack.enter_context(db._pool.connection())
                held = db.prepared.prepared(conn)
                there = conn.execute("SELECT name FROM pg_prepared_statements WHERE "
                                     "starts_with(name, %s)", (PREFIX,)).fetchall()
                assert set(held) == {name for (name,) in there}
        assert db.prepared.resent == 0
    finally:
        db.close()


def test_a_batch_of_more_texts_than_a_connection_keeps(pg_dsn: str) -> None:
    """At exactly ``PER_CONNECTION`` texts held, a batch of more distinct texts: the ones
    past the bound sent plainly, every row written as plainly."""
    db = PgDatabase(pg_dsn)
    size = db.prepared.size
    texts = [f"INSERT INTO meta (key, value) VALUES (?, ?) /* {n} */" for n in range(2 * size)]
    try:
        with db.batched():
            for n, sql in enumerate(texts[:size]):
                db.execute(sql, (f"a{n}", str(n)))
        with db._pool.connection() as conn:
            assert len(db.prepared.prepared(conn)) == size
        for round_ in range(2):
            with db.batched():
                for n, sql in enumerate(texts[size // 2:] + texts[:3]):
                    db.execute(sql, (f"b{round_}.{n}", str(n)))
            with db._pool.connection() as conn:
                held = db.prepared.prepared(conn)
                there = conn.execute("SELECT name FROM pg_prepared_statements WHERE "
                                     "starts_with(name, %s)", (PREFIX,)).fetchall()
            assert len(held) == size and set(held) == {name for (name,) in there}
        rows = dict(db.execute("SELECT key, value FROM meta WHERE key LIKE 'a%' OR key LIKE 'b%'"))
        want = {f"a{n}": str(n) for n in range(size)}
        want |= {f"b{r}.{n}": str(n) for r in range(2) for n in range(size + size // 2 + 3)}
        assert rows == want and db.prepared.resent == 0
    finally:
        db.close()


def test_the_texts_prepared_before_a_refused_one_are_executed(pg_dsn: str) -> None:
    """A preparation the server refuses part way: the texts before the refused one are held,
    with their parameter types, and executed in that batch; the refused one is sent plainly."""
    put = "INSERT INTO meta (key, value) VALUES (?, ?)"
    odd = "INSERT INTO meta (key, value) SELECT ?, ? WHERE ? IS NULL"
    statements = PreparedStatements()
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        conn.execute("CREATE TABLE meta (key text PRIMARY KEY, value text)")
        composed = statements.compose(conn, [(put, ("a", "1")), (odd, ("b", "2", None)),
                                             (put, ("c", 3))])
        lines = composed.text.split(b"\n;\n")[1:]
        assert [line.startswith(b"EXECUTE") for line in lines] == [True, False, False]
        conn.execute(composed.text, prepare=False)
        assert conn.execute("SELECT key, value FROM meta ORDER BY key").fetchall() == [
            ("a", "1"), ("b", "2"), ("c", "3")]
        assert list(statements.prepared(conn).values()) == [put]


def test_a_guards_refusal_and_a_unique_violation_through_executes(pg_dsn: str) -> None:
    """A guard's refusal raises its error at once (not sent again plainly); a unique
    violation is sent again plainly and raises as it always did; neither writes a row."""
    put = "INSERT INTO meta (key, value) VALUES (?, ?)"
    db = PgDatabase(pg_dsn)
    try:
        with db.batched():
            db.execute(put, ("a", "1"))
        for _ in range(2):
            with pytest.raises(LookupError), db.batched():
                db.execute(put, ("b", "1"))
                db.guard("UPDATE meta SET value = ? WHERE key = ?", ("2", "gone"),
                         LookupError("gone"))
            assert db.prepared.resent == 0
        with pytest.raises(psycopg.errors.UniqueViolation), db.batched():
            db.execute(put, ("c", "1"))
            db.execute(put, ("a", "2"))
        assert db.prepared.resent == 1 and db.prepared.size > 0
        assert dict(db.execute("SELECT key, value FROM meta WHERE key IN ('a', 'b', 'c')")) == {
            "a": "1"}
    finally:
        db.close()


def test_two_connections_each_emptied_once_keep_preparing(pg_dsn: str) -> None:
    """Two connections whose statements a rollback removed (``DEALLOCATE ALL``) one after
    the other, before either sent a batch: each prepares again; only one connection emptied
    twice in a row turns preparing off."""
    put = "INSERT INTO meta (key, value) VALUES (?, ?)"
    statements = PreparedStatements()

    def send(conn: psycopg.Connection[Any], key: str, pooler: bool = False) -> None:
        composed = statements.compose(conn, [(put, (key, "1"))])
        if pooler:  # the EXECUTE reaches a session other than the one that prepared
            conn.execute(b"DEALLOCATE ALL")
        try:
            conn.execute(composed.text, prepare=False)
        except psycopg.errors.InvalidSqlStatementName as err:
            statements.failed(conn, err)
        else:
            statements.went_through(conn)

    with psycopg.connect(pg_dsn, autocommit=True) as one, \
            psycopg.connect(pg_dsn, autocommit=True) as two:
        one.execute("CREATE TABLE meta (key text PRIMARY KEY, value text)")
        for n, conn in enumerate((one, two)):
            send(conn, f"a{n}")
        for conn in (one, two):
            conn.execute(b"DEALLOCATE ALL")
        for n, conn in enumerate((one, two)):
            send(conn, f"b{n}")
        assert statements.resent == 2 and statements.size > 0
        for n, conn in enumerate((one, two)):
            send(conn, f"c{n}")
            assert list(statements.prepared(conn).values()) == [put]
        assert statements.resent == 2
        send(one, "d0", pooler=True)
        assert statements.resent == 3 and statements.size > 0
        send(one, "d1", pooler=True)
        assert statements.resent == 4 and statements.size == 0
        keys = one.execute("SELECT key FROM meta ORDER BY key").fetchall()
        assert keys == [("a0",), ("a1",), ("c0",), ("c1",)]  # the failed ones (not sent again)
