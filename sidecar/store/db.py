"""The one SQLite connection (apsw): WAL, migrations, transactions, a lock for threads."""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import apsw

from sidecar.errors import FailedPrecondition
from sidecar.store.migrations import MIGRATIONS, SCHEMA_VERSION

log = logging.getLogger(__name__)

Row = tuple[Any, ...]


class Database:
    """A serialised apsw connection. Every public method holds the lock for its duration."""

    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._conn = apsw.Connection(str(self.path))
        self._conn.set_busy_timeout(5000)
        self._lock = threading.RLock()
        self._closed = False
        for pragma in (
            "PRAGMA journal_mode=WAL",
            "PRAGMA synchronous=NORMAL",
            "PRAGMA foreign_keys=ON",
            "PRAGMA temp_store=MEMORY",
        ):
            self._conn.execute(pragma).fetchall()
        self._migrate()

    @property
    def schema_version(self) -> int:
        return int(self.query_one("PRAGMA user_version")[0])  # type: ignore[index]

    def _migrate(self) -> None:
        current = self.schema_version
        if current > SCHEMA_VERSION:
            raise FailedPrecondition(
                f"database {self.path} has schema version {current}, newer than this "
                f"build's {SCHEMA_VERSION}; upgrade memsidecar or use another --data-dir"
            )
        for version in range(current, SCHEMA_VERSION):
            with self.transaction():
                self._conn.execute(MIGRATIONS[version])
                self._conn.execute(f"PRAGMA user_version={version + 1}")
            log.info("schema migrated", extra={"db": str(self.path), "version": version + 1})

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """BEGIN IMMEDIATE ... COMMIT; rolls back on any exception. Re-entrant (savepoints)."""
        with self._lock:
            self._check_open()
            with self._conn:
                yield

    def execute(self, sql: str, params: tuple[Any, ...] | dict[str, Any] = ()) -> list[Row]:
        with self._lock:
            self._check_open()
            return list(self._conn.execute(sql, params))

    def executemany(self, sql: str, rows: list[tuple[Any, ...]]) -> None:
        with self._lock:
            self._check_open()
            self._conn.executemany(sql, rows)

    def query_one(self, sql: str, params: tuple[Any, ...] = ()) -> Row | None:
        rows = self.execute(sql, params)
        return rows[0] if rows else None

    def changes(self) -> int:
        with self._lock:
            return int(self._conn.changes())

    def size_bytes(self) -> int:
        row = self.query_one(
            "SELECT page_count * page_size FROM pragma_page_count(), pragma_page_size()"
        )
        return int(row[0]) if row else 0

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
            try:
                self._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
            finally:
                self._conn.close()

    def _check_open(self) -> None:
        if self._closed:
            raise FailedPrecondition("the database is closed (the sidecar is shutting down)")
