"""The ``[store]`` section: where memories live (a SQLite file, or a shared PostgreSQL)."""

from __future__ import annotations

from dataclasses import dataclass, field

from sidecar.knobs import knob

BACKENDS = ("sqlite", "postgres")


@dataclass(frozen=True, slots=True)
class StoreConfig:
    backend: str = field(default="sqlite", metadata=knob(
        "sqlite: a file in the data dir, one sidecar. postgres: one PostgreSQL database "
        "shared by sidecars on many hosts, each keeping its indexes in memory "
        "(docs/scaling.md).", choices=BACKENDS, restart=True))
    dsn: str = field(default="", metadata=knob(
        "The PostgreSQL connection string (postgresql://user@host:port/db) when backend = "
        '"postgres"; the environment variable MEMSIDECAR_STORE_DSN overrides it, so a password '
        "need not be written here. Never logged.", restart=True, secret=True))
    max_connections: int = field(default=8, metadata=knob(
        "PostgreSQL connections this sidecar keeps at most (a pool).", ge=2, le=1000,
        restart=True))
    feed_retention_days: float = field(default=7.0, metadata=knob(
        "PostgreSQL: days the change feed keeps each change. A sidecar away for longer "
        "reloads the whole store in the background (serving meanwhile) instead of catching "
        "up change by change.", ge=0.01, le=3650, restart=True))
