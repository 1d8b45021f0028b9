"""A batch of EXECUTEs against the same batch sent plainly, statement by statement, for values
whose type differs from the one the server infers for their parameter: the same rows, the same
error."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import psycopg
import pytest

from sidecar.injection.state_repo import StateRepo
from sidecar.store.postgres.db import PgDatabase
from sidecar.store.postgres.prepared import PreparedStatements
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
    go as EXECUTEs, once the texts are prepared: every statement with parameters."""
    db = PgDatabase(pg_dsn)
    try:
        sent: list[list[tuple[str, Any]]] = []
        send = db._send

        def capture(batch: Any) -> None:
            sent.append(list(batch.statements))
            send(batch)

        db._send = capture  # type: ignore[method-assign]
        repo = StateRepo(db)
        for turn in (1, 2):
            repo.save("c", saved_turn(turn, ["m1", "m2"], None), expect=turn - 1)
        with db._pool.connection() as conn:
            composed = db.prepared.compose(conn, sent[-1])
        lines = composed.text.split(b"\n;\n")[1:]
        assert composed.executes and len(lines) == len(sent[-1])
        for (sql, params), line in zip(sent[-1], lines, strict=True):
            assert line.startswith(b"EXECUTE ") == bool(params), sql
    finally:
        db.close()
