"""The PostgreSQL connection pool behind the store contract (psycopg 3, psycopg-pool).

Statements use the contract's ``?`` placeholders (rewritten to psycopg's ``%s``). A
transaction pins one pooled connection to its thread (nested ones are savepoints) and, as
with SQLite, the writers of one process run one at a time; reads outside a transaction take
any pooled connection. A lost server surfaces as ``Unavailable`` naming the store without
its password.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import psycopg
from psycopg_pool import ConnectionPool, PoolTimeout

from sidecar.errors import FailedPrecondition, Unavailable
from sidecar.store.contract import Dialect, Params, Row
from sidecar.store.postgres.dsn import describe, scrub
from sidecar.store.postgres.migrations import MIGRATIONS, SCHEMA_VERSION
from sidecar.store.postgres.prepared import PreparedStatements, plain, psycopg_sql

log = logging.getLogger(__name__)

# Keys of pg_advisory_xact_lock. MIGRATION_LOCK: sidecars starting together migrate one at a
# time. FEED_LOCK: held shared by every transaction that changes memories or edges, from its
# first change (the change-feed trigger takes it; migration 10 spells the number) or its
# scope locks (``scope_locks``) to its commit, and exclusive by one that may change any scope.
MIGRATION_LOCK = 0x6D656D73  # "mems"
FEED_LOCK = 0x6D656D74
CONNECT_TIMEOUT_S = 10.0  # how long opening the store waits for a first connection
PROBE_EVERY_S = 1.0  # while the server is away: one call a second tries it, others fail fast
# A ``guard`` statement that changed no row fails in the server with this text (a cast error:
# SQL has no RAISE outside a function) and the index of the guard in its batch.
GUARD = "memsidecar guard: no row changed, guard"


class PgDatabase:
    dialect: Dialect = "postgres"

    def __init__(self, dsn: str, *, max_connections: int = 8) -> None:
        timeout_s = CONNECT_TIMEOUT_S
        self.where = describe(dsn)
        self.origin = uuid.uuid4().hex  # tags this process's rows in the change feed
        self._dsn = dsn
        self._lock = threading.RLock()
        self._local = threading.local()
        self._closed = False
        self._down_at: float | None = None  # monotonic time the server was last found away
        self.prepared = PreparedStatements()  # a batch's statements, prepared per connection
        self._pool = ConnectionPool(
            dsn, min_size=1, max_size=max_connections, open=False, timeout=timeout_s,
            kwargs={"autocommit": True}, configure=self._configure, name="memsidecar-store")
        try:
            self._pool.open(wait=True, timeout=timeout_s)
        except PoolTimeout:
            self._pool.close()
            raise Unavailable(f"cannot connect to the PostgreSQL store {self.where} within "
                              f"{timeout_s:g} s; is it running and is the DSN right?") from None
        try:
            self._migrate()
        except BaseException:
            self._pool.close()
            raise

    def _configure(self, conn: psycopg.Connection[Any]) -> None:
        conn.execute("SELECT set_config('memsidecar.origin', %s, false)", (self.origin,))

    def listener(self) -> psycopg.Connection[Any]:
        """A connection of its own (not pooled, autocommit) for LISTEN; the caller closes it."""
        with self._errors():
            return psycopg.connect(self._dsn, autocommit=True, connect_timeout=5)

    @property
    def schema_version(self) -> int:
        rows = self.execute("SELECT to_regclass('schema_version') IS NOT NULL")
        if not rows[0][0]:
            return 0
        row = self.query_one("SELECT version FROM schema_version")
        return 0 if row is None else int(row[0])

    def _migrate(self) -> None:
        with self.transaction():
            self.execute("SELECT pg_advisory_xact_lock(?)", (MIGRATION_LOCK,))
            self.execute("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)")
            current = self.schema_version
            if current > SCHEMA_VERSION:
                raise FailedPrecondition(
                    f"the PostgreSQL store {self.where} has schema version {current}, newer "
                    f"than this build's {SCHEMA_VERSION}; upgrade memsidecar")
            for version in range(current, SCHEMA_VERSION):
                self.execute(MIGRATIONS[version])
                self.execute("DELETE FROM schema_version")
                self.execute("INSERT INTO schema_version (version) VALUES (?)", (version + 1,))
                log.info("schema migrated", extra={"db": self.where, "version": version + 1})

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """A transaction; nested in one, a savepoint; nested in a ``batched`` block, part of
        its batch (all committed or none), and a block that raises leaves none of its
        statements in the batch (nothing of it was sent)."""
        with self._lock:
            self._check_open()
            batch: _Batch | None = getattr(self._local, "batch", None)
            if batch is not None:
                statements, guards = len(batch.statements), len(batch.guards)
                try:
                    yield
                except BaseException:
                    del batch.statements[statements:], batch.guards[guards:]
                    raise
                return
            conn: psycopg.Connection[Any] | None = getattr(self._local, "conn", None)
            if conn is not None:
                with self._errors(), conn.transaction():
                    yield
                return
            self._reachable()
            with self._errors(), self._pool.connection() as conn:
                self._local.conn = conn
                try:
                    with conn.transaction():
                        yield
                finally:
                    self._local.conn = None

    @contextmanager
    def batched(self) -> Iterator[None]:
        """A transaction of writes sent in one round trip: the statements are kept here and
        sent on exit as one query string (parameters bound client-side, by psycopg's
        escaping; a text as an EXECUTE of the statement the connection prepared, in a round
        trip before the first time it sees the text: ``prepared.py``). PostgreSQL runs the
        statements of one query string as one implicit transaction: all committed, or, when
        one fails (a ``guard``), none (the error is raised). Nothing is sent when the block
        raises. Nothing inside may read a result or call ``changes()``; a ``transaction()``
        inside is part of the batch. Nested in a transaction: a savepoint."""
        with self._lock:
            self._check_open()
            if getattr(self._local, "batch", None) is not None:
                yield  # part of the batch around it
                return
            if getattr(self._local, "conn", None) is not None:
                with self.transaction():
                    yield
                return
            batch = _Batch()
            self._local.batch = batch
            try:
                yield
            finally:
                self._local.batch = None
            if batch.statements:
                self._send(batch)

    def _send(self, batch: _Batch) -> None:
        self._reachable()
        with self._errors(), self._pool.connection() as conn, _guarded(batch.guards):
            composed = self.prepared.compose(conn, batch.statements)
            try:
                # No parameters, never prepared by psycopg: the simple protocol, one message.
                conn.execute(composed.text, prepare=False)
            except psycopg.Error as err:
                if (not composed.executes or _guard_index(err) is not None
                        or isinstance(err, psycopg.OperationalError)):
                    raise
                self.prepared.failed(conn, err)
                conn.execute(plain(psycopg.ClientCursor(conn), batch.statements),
                             prepare=False)
            else:
                if composed.executes:
                    self.prepared.went_through(conn)

    def guard(self, sql: str, params: Params, error: Exception) -> None:
        """``sql`` wrapped so that the server fails the statement when it changes no row:
        raised as ``error``, at once, or in a batch when it is sent (nothing of the batch
        committed)."""
        self._refusing(lambda refused: f"WITH guarded AS ({sql} RETURNING 1) SELECT CASE "
                       f"WHEN EXISTS (SELECT 1 FROM guarded) THEN 0 ELSE {refused} END",
                       params, error)

    def check(self, condition: str, params: Params, error: Exception) -> None:
        """As ``guard``, the statement failing when ``condition`` is not true. Under READ
        COMMITTED each statement of a batch reads afresh: after a lock statement before it,
        what committed while the lock was awaited."""
        self._refusing(lambda refused: f"SELECT CASE WHEN {condition} THEN 0 ELSE {refused} "
                       "END", params, error)

    def _refusing(self, statement: Callable[[str], str], params: Params,
                  error: Exception) -> None:
        """Run ``statement(refused)``, whose ``refused`` expression fails it in the server
        (a cast error: SQL has no RAISE outside a function), as ``error``."""
        batch: _Batch | None = getattr(self._local, "batch", None)
        guards = batch.guards if batch is not None else []
        wrapped = statement(f"(SELECT '{GUARD} {len(guards)}'::text)::integer")
        guards.append(error)
        if batch is not None:
            self.execute(wrapped, params)
            return
        with _guarded(guards):
            self.execute(wrapped, params)

    def execute(self, sql: str, params: Params = ()) -> list[Row]:
        batch: _Batch | None = getattr(self._local, "batch", None)
        if batch is not None:
            batch.statements.append((sql, params))
            return []
        with self._connection() as conn:
            cur = conn.execute(psycopg_sql(sql), params) if params else conn.execute(sql.encode())
            self._local.cursor = cur
            return cur.fetchall() if cur.description is not None else []

    def read_apart(self, sql: str, params: Params = ()) -> list[Row]:
        """A read on a pooled connection of its own, outside this thread's transaction or
        batch: it sees what is committed and never waits for this thread's writes. Its rows
        come in the binary format (a scope's embeddings as they are stored, not as hex
        text; the same Python values)."""
        self._check_open()
        self._reachable()
        with self._errors(), self._pool.connection() as conn:
            cur = (conn.execute(psycopg_sql(sql), params, binary=True) if params
                   else conn.execute(sql.encode()))
            return cur.fetchall() if cur.description is not None else []

    def executemany(self, sql: str, rows: list[tuple[Any, ...]]) -> None:
        if not rows:
            return
        batch: _Batch | None = getattr(self._local, "batch", None)
        if batch is not None:
            batch.statements.extend((sql, row) for row in rows)
            return
        with self._connection() as conn:
            cur = conn.cursor()
            cur.executemany(psycopg_sql(sql), rows)
            self._local.cursor = cur

    def query_one(self, sql: str, params: tuple[Any, ...] = ()) -> Row | None:
        rows = self.execute(sql, params)
        return rows[0] if rows else None

    def read_together(self, reads: Sequence[tuple[str, tuple[Any, ...]]]) -> list[list[Row]]:
        """In one round trip: a read-only REPEATABLE READ transaction (one snapshot) of the
        reads, pipelined on a pooled connection. In this thread's transaction or batch, its
        statements, one after another (a batch cannot read)."""
        self._not_batched("read_together()")
        if getattr(self._local, "conn", None) is not None:
            return [self.execute(sql, params) for sql, params in reads]
        self._check_open()
        self._reachable()
        with self._errors(), self._pool.connection() as conn:
            with conn.pipeline():
                conn.execute(b"BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
                cursors = [conn.execute(psycopg_sql(sql), params) if params
                           else conn.execute(sql.encode())
                           for sql, params in reads]
                conn.execute(b"COMMIT")
            return [cur.fetchall() for cur in cursors]

    def changes(self) -> int:
        self._not_batched("changes()")
        cur = getattr(self._local, "cursor", None)
        return 0 if cur is None else max(0, int(cur.rowcount))

    def size_bytes(self) -> int:
        row = self.query_one("SELECT pg_database_size(current_database())")
        return int(row[0]) if row else 0

    def purge_wal(self) -> bool:
        """The server owns its WAL and reclaims dead rows by VACUUM (docs/users.md)."""
        return True

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self._pool.close()

    @contextmanager
    def _connection(self) -> Iterator[psycopg.Connection[Any]]:
        self._check_open()
        conn: psycopg.Connection[Any] | None = getattr(self._local, "conn", None)
        if conn is not None:
            yield conn
            return
        self._reachable()
        with self._errors(), self._pool.connection() as fresh:
            yield fresh

    def _reachable(self) -> None:
        """While the server is away, Unavailable at once, except one probe per
        PROBE_EVERY_S; when a probe connects, connections broken by the outage are dropped."""
        if self._down_at is None:
            return
        if time.monotonic() - self._down_at < PROBE_EVERY_S:
            raise self._unavailable("unreachable")
        with self._errors():
            psycopg.connect(self._dsn, connect_timeout=2).close()
        self.recovered()

    def recovered(self) -> None:
        """The server answers again: drop the pooled connections the outage broke."""
        self._down_at = None
        self._pool.check()

    @contextmanager
    def _errors(self) -> Iterator[None]:
        """A lost or unreachable server -> Unavailable (no password in the message)."""
        try:
            yield
        except (psycopg.OperationalError, PoolTimeout) as err:
            if isinstance(err, psycopg.errors.QueryCanceled):
                raise
            self._down_at = time.monotonic()
            raise self._unavailable(scrub(str(err).strip(), self._dsn)) from None

    def _unavailable(self, why: str) -> Unavailable:
        return Unavailable(f"the PostgreSQL store {self.where} is unavailable ({why}); "
                           "memory writes are refused until it is back, searches and "
                           "injections are served from memory")

    def _not_batched(self, what: str) -> None:
        """A batch's statements are only sent at its end."""
        if getattr(self._local, "batch", None) is not None:
            raise RuntimeError(f"{what} inside batched(): a batch holds writes only")

    def _check_open(self) -> None:
        if self._closed:
            raise FailedPrecondition("the database is closed (the sidecar is shutting down)")


@dataclass(slots=True)
class _Batch:
    """The statements of a ``batched`` block, and the errors of its guards by index."""

    statements: list[tuple[str, Params]] = field(default_factory=list)
    guards: list[Exception] = field(default_factory=list)


@contextmanager
def _guarded(guards: list[Exception]) -> Iterator[None]:
    """The server's refusal of a ``guard`` statement -> the error it was given."""
    try:
        yield
    except psycopg.errors.InvalidTextRepresentation as err:
        index = _guard_index(err)
        if index is None:
            raise
        raise guards[index] from None


def _guard_index(err: psycopg.Error) -> int | None:
    """The index of the ``guard`` that failed ``err`` (None: not a guard's failure)."""
    message = err.diag.message_primary or ""
    if not isinstance(err, psycopg.errors.InvalidTextRepresentation) or GUARD not in message:
        return None
    return int(message.split(GUARD, 1)[1].split('"')[0])
