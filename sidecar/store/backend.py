"""Open the configured backend of the store contract."""

from __future__ import annotations

from pathlib import Path

from sidecar.disk import DiskFaults
from sidecar.store.config import StoreConfig
from sidecar.store.contract import SqlStore
from sidecar.store.db import Database


def open_store(config: StoreConfig, sqlite_path: Path,
               faults: DiskFaults | None = None) -> SqlStore:
    """The SQLite file at ``sqlite_path`` (its refused writes recorded in ``faults``), or the
    PostgreSQL database of ``config``."""
    if config.backend == "postgres":
        from sidecar.store.postgres.db import PgDatabase  # psycopg only when configured
        from sidecar.store.postgres.dsn import resolve

        return PgDatabase(resolve(config.dsn), max_connections=config.max_connections)
    return Database(sqlite_path, faults)
