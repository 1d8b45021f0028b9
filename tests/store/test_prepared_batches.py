"""A PostgreSQL batch's statements as EXECUTEs of statements prepared once per connection:
the same rows as the plain statements write; what each connection holds is what the store
believes it holds (a new connection, one that evicts, one replaced, one the server emptied);
guards refused through EXECUTE; a text the server cannot prepare; no batch's values kept."""

from __future__ import annotations

import random
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from typing import Any

import psycopg
import pytest

from sidecar.injection.state_repo import ChannelMoved, StateRepo
from sidecar.store.postgres.db import PgDatabase
from sidecar.store.postgres.prepared import PREFIX, PreparedStatements
from tests.store.contract_data import saved_turn
from tests.store.test_contract_batch import HOSTILE

PUT = "INSERT INTO meta (key, value) VALUES (?, ?)"
SET = "UPDATE meta SET value = ? WHERE key = ?"


class Refused(Exception):
    pass


@pytest.fixture
def db(pg_dsn: str) -> Iterator[PgDatabase]:
    store = PgDatabase(pg_dsn)
    yield store
    store.close()


def _meta(db: PgDatabase) -> dict[str, str]:
    rows = db.execute("SELECT key, value FROM meta WHERE key NOT LIKE 'embedding.%'")
    return {str(k): str(v) for k, v in rows}


def _on_server(conn: psycopg.Connection[Any]) -> dict[str, str]:
    """The connection's prepared statements of this module, name -> statement."""
    rows = conn.execute("SELECT name, statement FROM pg_prepared_statements WHERE "
                        "starts_with(name, %s)", (PREFIX,)).fetchall()
    return {str(name): str(statement) for name, statement in rows}


@contextmanager
def _pooled(db: PgDatabase) -> Iterator[psycopg.Connection[Any]]:
    """A connection of the store's pool (used by one thread, it holds one: replaced, two)."""
    with db._pool.connection() as conn:
        yield conn


def _agrees(db: PgDatabase) -> dict[str, str]:
    """What the store believes each of its pool's connections holds (name -> text) is what
    the server holds; all of it."""
    believed: dict[str, str] = {}
    with ExitStack() as stack:
        for _ in range(db._pool.get_stats()["pool_size"]):
            conn = stack.enter_context(db._pool.connection())
            held = db.prepared.prepared(conn)
            assert set(held) == set(_on_server(conn))
            believed.update(held)
    return believed


def test_prepared_batches_write_what_plain_ones_write(pg_cluster: Any) -> None:
    """Random commits of channel turns and hostile rows, sent prepared to one database and
    plainly to another: the same rows, byte for byte; the same swaps refused."""
    prepared, plain = PgDatabase(pg_cluster.new_database()), PgDatabase(pg_cluster.new_database())
    plain.prepared = PreparedStatements(0)
    try:
        for db in (prepared, plain):
            rng = random.Random(9)
            repo = StateRepo(db)
            for turn in range(1, 40):
                ids = rng.sample([f"m{i}" for i in range(12)], rng.randint(0, 6))
                held = None if turn < 4 else frozenset(range(max(0, turn - 3), turn))
                stale = rng.random() < 0.15
                try:
                    repo.save("c", saved_turn(turn, ids, held),
                              expect=turn - 2 if stale else turn - 1)
                except ChannelMoved:
                    assert stale
                    repo.save("c", saved_turn(turn, ids, held), expect=turn - 1)
                with db.batched():
                    db.execute(PUT, (f"k{turn}", rng.choice((HOSTILE, "", "x" * 3000))))
                    db.execute("UPDATE meta SET value = value || ? WHERE key = ?",
                               (rng.choice(("'", "\\", "%s", "?")), f"k{turn - 1}"))
        tables = ("injection_channels", "injection_ids", "injection_buffer",
                  "injection_blocks", "injection_replies", "meta")
        for table in tables:
            read = f"SELECT * FROM {table} ORDER BY 1, 2"
            assert prepared.execute(read) == plain.execute(read), table
        assert _agrees(prepared)  # it did prepare: the turn's statements are held
        with _pooled(plain) as conn:
            assert _on_server(conn) == {}
    finally:
        prepared.close()
        plain.close()


def test_a_guard_refused_through_execute_writes_nothing(db: PgDatabase) -> None:
    for attempt in range(3):  # prepared before the first, executed by each
        with pytest.raises(Refused), db.batched():
            db.execute(PUT, (f"a{attempt}", "1"))
            db.guard(SET, ("2", "missing"), Refused())
        assert _meta(db) == {}
    names = _agrees(db)
    assert len(names) == 2 and PUT in names.values()
    with db.batched():  # the same texts, now kept
        db.execute(PUT, ("b", "1"))
        db.guard(SET, ("2", "b"), Refused())
    assert _meta(db) == {"b": "2"} and _agrees(db) == names


def test_a_statement_prepared_on_one_connection_is_prepared_again_on_another(
        pg_dsn: str) -> None:
    statements = PreparedStatements()
    sql = "INSERT INTO t VALUES (?, ?, ?)"
    with psycopg.connect(pg_dsn, autocommit=True) as one, \
            psycopg.connect(pg_dsn, autocommit=True) as two:
        one.execute("CREATE TABLE t (k text PRIMARY KEY, v bytea, n integer)")
        seen: dict[int, dict[str, str]] = {}
        for n, conn in enumerate((one, two, one, two)):
            composed = statements.compose(conn, [(sql, (f"k{n}", bytes([n, 0, 92]), None))])
            assert composed.executes and composed.text.count(b"EXECUTE") == 1
            conn.execute(composed.text, prepare=False)
            held = statements.prepared(conn)
            assert list(held.values()) == [sql] and set(_on_server(conn)) == set(held)
            assert seen.setdefault(id(conn), held) == held  # prepared once, then kept
        assert one.execute("SELECT k, v, n FROM t ORDER BY k").fetchall() == [
            (f"k{n}", bytes([n, 0, 92]), None) for n in range(4)]
        assert not set(statements.prepared(one)) & set(statements.prepared(two))


def test_an_execute_reaching_another_session_runs_no_other_text(pg_dsn: str) -> None:
    """Two stores (two sidecars) prepare different texts at the same place in their first
    batch; one's batch sent on the other's session (a transaction pooler between) finds no
    statement of its names, rather than another's."""
    mine, theirs = PreparedStatements(), PreparedStatements()
    with psycopg.connect(pg_dsn, autocommit=True) as one, \
            psycopg.connect(pg_dsn, autocommit=True) as two:
        one.execute("CREATE TABLE t (k text PRIMARY KEY, n integer)")
        sent = mine.compose(one, [("INSERT INTO t VALUES (?, ?)", ("mine", 1))])
        theirs.compose(two, [("DELETE FROM t WHERE k <> ? AND n <> ?", ("x", 0))])
        with pytest.raises(psycopg.errors.InvalidSqlStatementName):
            two.execute(sent.text, prepare=False)
        one.execute(sent.text, prepare=False)
        assert one.execute("SELECT k, n FROM t").fetchall() == [("mine", 1)]


def test_a_prepared_statement_keeps_no_copy_of_a_batchs_values(db: PgDatabase) -> None:
    """The server keeps the source text of a prepared statement: the batch's literals (a
    turn's embeddings, its reply) are not in it."""
    secret = "a value of the batch " * 50
    with db.batched():
        db.execute(PUT, ("a", secret))
        db.execute(SET, (secret, "a"))
    with _pooled(db) as conn:
        there = _on_server(conn)
    assert len(there) == 2 and not any("a value of the batch" in text for text in there.values())
    assert _meta(db) == {"a": secret}


def test_the_least_recently_used_text_is_deallocated(db: PgDatabase) -> None:
    db.prepared = PreparedStatements(2)
    texts = [f"UPDATE meta SET value = ? WHERE key = ? AND {n} = {n}" for n in range(4)]
    for sql in texts:
        db.execute(PUT, (sql, "0"))
    for n, at in enumerate((0, 1, 0, 2, 3, 0)):
        with db.batched():
            db.execute(texts[at], (str(n), texts[at]))
    assert sorted(_agrees(db).values()) == [texts[0], texts[3]]  # the last two used
    assert _meta(db) == {texts[0]: "5", texts[1]: "1", texts[2]: "3", texts[3]: "4"}
    with db.batched():  # a batch with more texts than the connection keeps: the rest plain
        for sql in texts:
            db.execute(sql, ("w", sql))
    assert _meta(db) == {sql: "w" for sql in texts} and len(_agrees(db)) == 2


def test_a_replaced_connection_prepares_again(db: PgDatabase, pg_dsn: str) -> None:
    with db.batched():
        db.execute(PUT, ("a", "1"))
    with _pooled(db) as conn:
        pid = conn.info.backend_pid
    with psycopg.connect(pg_dsn, autocommit=True) as admin:
        admin.execute("SELECT pg_terminate_backend(%s)", (pid,))
    db._pool.check()  # the pool finds it gone and opens another
    with db.batched():
        db.execute(PUT, ("b", "1"))
    with _pooled(db) as conn:
        assert conn.info.backend_pid != pid
    assert _meta(db) == {"a": "1", "b": "1"} and len(_agrees(db)) == 1


def test_a_connection_the_server_emptied_is_sent_plainly(db: PgDatabase) -> None:
    """Its EXECUTE fails: the batch is sent again as plain statements (written once), and
    the connection prepares again; the server forgetting statements twice in a row, before
    a batch of EXECUTEs went through, nothing is prepared any more."""
    with db.batched():
        db.execute(PUT, ("a", "1"))
    with _pooled(db) as conn:
        conn.execute(f"DEALLOCATE {next(iter(db.prepared.prepared(conn)))}".encode())
    with db.batched():
        db.execute(PUT, ("b", "1"))
        db.execute(SET, ("2", "a"))
    assert _meta(db) == {"a": "2", "b": "1"} and db.prepared.resent == 1
    assert db.prepared.size > 0 and _agrees(db) == {}
    with db.batched():  # prepared again, and executed
        db.execute(PUT, ("c", "1"))
    assert set(_agrees(db).values()) == {PUT} and db.prepared.resent == 1
    compose = db.prepared.compose

    def pooler(conn: psycopg.Connection[Any], statements: Any) -> Any:
        """The EXECUTEs reach a session other than the one that prepared (a pooler)."""
        composed = compose(conn, statements)
        conn.execute(b"DEALLOCATE ALL")
        return composed

    db.prepared.compose = pooler  # type: ignore[method-assign]
    with db.batched():
        db.execute(PUT, ("d", "1"))
    assert db.prepared.resent == 2 and db.prepared.size > 0  # once: prepared again
    with db.batched():
        db.execute(PUT, ("e", "1"))
    assert db.prepared.resent == 3 and db.prepared.size == 0 and _agrees(db) == {}
    with db.batched():
        db.execute(PUT, ("f", "1"))
    assert db.prepared.resent == 3 and _agrees(db) == {}
    assert _meta(db) == {"a": "2", "b": "1", "c": "1", "d": "1", "e": "1", "f": "1"}


def test_a_rolled_back_transaction_leaves_preparing_on(db: PgDatabase) -> None:
    """psycopg deallocates every statement of a connection (its own and these) when a
    transaction rolls back on one where it prepared a read it ran five times: the next batch
    is sent again plainly once, and the texts are prepared again, not turned off."""
    for n in range(3):
        for key in (f"a{n}", f"z{n}"):  # the first after a rollback is sent again plainly
            with db.batched():
                db.execute(PUT, (key, "1"))
                db.execute(SET, ("2", key))
        for m in range(6):  # psycopg prepares it (again: it forgot it in the rollback)
            db.execute("SELECT value FROM meta WHERE key = ?", (f"x{m}",))
        with pytest.raises(Refused), db.transaction():
            db.execute(PUT, (f"b{n}", "1"))
            raise Refused
    for key in ("c", "d"):
        with db.batched():
            db.execute(PUT, (key, "1"))
    assert db.prepared.resent == 3  # the first batch after each rollback
    assert db.prepared.size > 0 and set(_agrees(db).values()) == {PUT}
    assert _meta(db) == {**{f"{k}{n}": "2" for k in "az" for n in range(3)}, "c": "1",
                         "d": "1"}


def test_a_text_the_server_cannot_prepare_is_sent_plainly(db: PgDatabase) -> None:
    """``? IS NULL`` has no type to infer: its PREPARE fails, the batch goes through with it
    plain, and it is not prepared again; the texts after it are prepared by the next batch."""
    odd = "INSERT INTO meta (key, value) SELECT ?, ? WHERE ? IS NULL"
    for n in range(3):
        with db.batched():
            db.execute(odd, (f"odd{n}", "1", None))
            db.execute(odd, (f"none{n}", "1", "x"))
            db.execute(PUT, (f"put{n}", "1"))
        assert set(_agrees(db).values()) == (set() if n == 0 else {PUT})
    assert _meta(db) == {f"{k}{n}": "1" for k in ("odd", "put") for n in range(3)}


def test_a_refused_batch_raises_the_plain_error_and_writes_nothing(db: PgDatabase) -> None:
    with db.batched():
        db.execute(PUT, ("a", "1"))
    with pytest.raises(psycopg.errors.UniqueViolation), db.batched():
        db.execute(SET, ("2", "a"))
        db.execute(PUT, ("a", "3"))
    assert _meta(db) == {"a": "1"}
    assert db.prepared.size > 0 and set(_agrees(db).values()) == {PUT, SET}
    with pytest.raises(Refused), db.batched():  # after the retry, guards still map
        db.execute(SET, ("4", "a"))
        db.guard(SET, ("5", "gone"), Refused())
    assert _meta(db) == {"a": "1"}
