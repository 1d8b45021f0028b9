"""The store contract: the SQL connection every repository is written against.

Two backends implement it: SQLite (``sidecar.store.db.Database``, one file per sidecar, the
default) and PostgreSQL (``sidecar.store.postgres.db.PgDatabase``, one database shared by
sidecars on many hosts). Repositories write portable SQL with ``?`` placeholders; the few
statements that differ ask ``dialect``.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import Any, Literal, Protocol

Row = tuple[Any, ...]
Params = tuple[Any, ...] | dict[str, Any]
Dialect = Literal["sqlite", "postgres"]


class SqlStore(Protocol):
    dialect: Dialect

    @property
    def schema_version(self) -> int: ...

    def transaction(self) -> AbstractContextManager[None]:
        """Commit on exit, roll back on an exception; nested calls are savepoints. Writers of
        one process run one at a time."""
        ...

    def batched(self) -> AbstractContextManager[None]:
        """A transaction of writes only: nothing inside reads a result, calls ``changes()``
        or opens a transaction; a server gets it in one round trip, on exit. A failing
        ``guard`` inside fails it as a whole. Nested in a transaction: a savepoint."""
        ...

    def guard(self, sql: str, params: Params, error: Exception) -> None:
        """A write (INSERT or UPDATE, no RETURNING) that must change a row: when it changes
        none, ``error`` is raised and nothing of the enclosing transaction or batch is
        written (in ``batched``, on its exit)."""
        ...

    def check(self, condition: str, params: Params, error: Exception) -> None:
        """A statement of its own evaluating ``condition`` (an SQL boolean expression, read
        afresh when it runs): when false, ``error`` is raised and nothing of the enclosing
        transaction or batch is written (in ``batched``, on its exit)."""
        ...

    def execute(self, sql: str, params: Params = ()) -> list[Row]: ...

    def executemany(self, sql: str, rows: list[tuple[Any, ...]]) -> None: ...

    def read_apart(self, sql: str, params: tuple[Any, ...] = ()) -> list[Row]:
        """A read on a connection of its own: committed rows, never waiting for (nor seeing)
        a write transaction or batch of the calling thread."""
        ...

    def query_one(self, sql: str, params: tuple[Any, ...] = ()) -> Row | None: ...

    def read_together(self, reads: Sequence[tuple[str, tuple[Any, ...]]]) -> list[list[Row]]:
        """Each read's rows, all from one snapshot: on a server, sent in one round trip (in
        this thread's transaction when it has one, which they then read)."""
        ...

    def changes(self) -> int:
        """Rows changed by this thread's last statement."""
        ...

    def size_bytes(self) -> int: ...

    def purge_wal(self) -> bool:
        """After an erasure: no earlier copy of a deleted row left in a write-ahead log the
        sidecar owns (SQLite: its WAL truncated; PostgreSQL: nothing to do here, the server
        owns its WAL and VACUUM its dead rows). False when it could not be done now."""
        ...

    def close(self) -> None: ...


def unhinted(db: SqlStore, column: str) -> str:
    """``column`` with SQLite's unary-plus hint (use no index on it) where the dialect has it."""
    return f"+{column}" if db.dialect == "sqlite" else column
