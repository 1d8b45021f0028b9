"""A cold scope's load from PostgreSQL: its rows read as before (text rows, the memories then
the edges from them by a list of ids) against the one statement of ``scope_rows_joined``
(binary rows), in process on a store made by ``bench.fleet_store --dsn``.

1. The read alone, psycopg on one connection: each drawn user's scope read by each variant
   in turn (the order alternating), p50 / p90 ms.
2. The whole load (``ResidentScopes.load``: read, terms, put into the indexes) in an
   ``App`` opened on the store with scopes on demand, users alternating between the
   variants: wall p50 / mean / p99 ms, the loading thread's CPU ms and its round trips
   to PostgreSQL.

Run: .venv/bin/python -m bench.experiments.pg_scope_load --dsn postgresql://... --data-dir DIR
     [--users 1000] [--agents 10] [--reads 600] [--loads 600]
Informed docs/decisions/0035-postgres-cold-scope-loads.md.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import psycopg

from bench.pg_trips import round_trips
from sidecar.api.server_config import ServerConfig
from sidecar.app import App
from sidecar.config import Config, ConfigStore
from sidecar.metrics.config import HttpConfig
from sidecar.retrieval.config import RetrievalConfig
from sidecar.retrieval.resident import loader
from sidecar.store import scope_rows
from sidecar.store.config import StoreConfig
from sidecar.store.edges import COLUMNS as EDGE_COLUMNS
from sidecar.store.memories import COLUMNS, scope_filter
from sidecar.store.postgres.db import PgDatabase
from sidecar.store.postgres.prepared import psycopg_sql

Key = tuple[str, str]


def _pg(sql: str) -> str:
    return sql.replace("?", "%s")


def read_before(conn: psycopg.Connection[Any], key: Key) -> tuple[list[Any], list[Any]]:
    rows = conn.execute(_pg(
        f"SELECT {COLUMNS}, embedding FROM memories WHERE agent_id = ? AND "
        f"{scope_filter(key[1])} AND forgotten = 0 AND seq > ? ORDER BY seq LIMIT ?"),
        (*key, 0, scope_rows.PAGE)).fetchall()
    ids = [row[1] for row in rows]
    edges = conn.execute(f"SELECT {EDGE_COLUMNS} FROM edges WHERE source_id IN "
                         f"({','.join(['%s'] * len(ids))})", ids).fetchall() if ids else []
    return rows, edges


def read_after(conn: psycopg.Connection[Any], key: Key) -> tuple[list[Any], list[Any]]:
    rows = conn.execute(_pg(scope_rows._joined(key[1])), (*key, 0, scope_rows.PAGE),
                        binary=True).fetchall()
    return rows, []


def reads(dsn: str, keys: list[Key]) -> None:
    variants: dict[str, Callable[..., Any]] = {"before": read_before, "after": read_after}
    times: dict[str, list[float]] = {name: [] for name in variants}
    with psycopg.connect(dsn, autocommit=True) as conn:
        for n, key in enumerate(keys):
            order = list(variants) if n % 2 else list(variants)[::-1]
            for name in order:
                begin = time.perf_counter()
                variants[name](conn, key)
                times[name].append((time.perf_counter() - begin) * 1000)
    for name, ms in times.items():
        print(f"read {name:6s}: p50 {np.median(ms):.2f} p90 {np.percentile(ms, 90):.2f} ms "
              f"({len(ms)} scopes)")


def _text_read_apart(self: PgDatabase, sql: str, params: tuple[Any, ...] = ()) -> list[Any]:
    """``read_apart`` as it was: rows in the text format."""
    with self._pool.connection() as conn:
        return conn.execute(psycopg_sql(sql), params).fetchall()


@contextmanager
def before_reads() -> Iterator[None]:
    """Loads read as before: text rows, the memories then the edges by their ids."""
    binary, joined = PgDatabase.read_apart, loader.scope_rows
    PgDatabase.read_apart = _text_read_apart
    loader.scope_rows = scope_rows.scope_rows_apart
    try:
        yield
    finally:
        PgDatabase.read_apart = binary
        loader.scope_rows = joined


def loads(dsn: str, data_dir: Path, keys: list[Key]) -> None:
    config = ServerConfig(listen="127.0.0.1:0", data_dir=str(data_dir), http=HttpConfig(""))
    settings = ConfigStore(data_dir / "unused.toml", Config(
        retrieval=RetrievalConfig(residency="scopes"),
        store=StoreConfig(backend="postgres", dsn=dsn)), None)
    app = App.open(config, settings=settings)
    resident = app.retriever.resident  # type: ignore[attr-defined]
    figures: dict[str, list[tuple[float, float, int]]] = {"before": [], "after": []}
    try:
        for n, key in enumerate(keys):
            name = "before" if n % 2 else "after"
            with (before_reads() if name == "before" else _nothing()), round_trips() as trips:
                wall, cpu = time.perf_counter(), time.thread_time()
                resident.load(key)
                figures[name].append(((time.perf_counter() - wall) * 1000,
                                      (time.thread_time() - cpu) * 1000, trips()))
    finally:
        app.close()
    for name, rows in figures.items():
        wall_ms, cpu_ms, trips_n = (np.array(col) for col in zip(*rows[10:], strict=True))
        print(f"load {name:6s}: wall p50 {np.median(wall_ms):.2f} mean {wall_ms.mean():.2f} "
              f"p99 {np.percentile(wall_ms, 99):.2f} ms; CPU mean {cpu_ms.mean():.2f} ms; "
              f"round trips {trips_n.mean():.2f} ({len(wall_ms)} loads)")


@contextmanager
def _nothing() -> Iterator[None]:
    yield


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--dsn", required=True)
    p.add_argument("--data-dir", type=Path, required=True, help="the App's own files")
    p.add_argument("--users", type=int, default=1000)
    p.add_argument("--agents", type=int, default=10)
    p.add_argument("--reads", type=int, default=600)
    p.add_argument("--loads", type=int, default=600)
    args = p.parse_args()
    rng = np.random.default_rng(5)
    drawn = rng.choice(args.users, min(args.users, max(args.reads, args.loads)), replace=False)
    keys = [(f"agent-{u % args.agents}", f"user-{u}") for u in drawn.tolist()]
    reads(args.dsn, keys[:args.reads])
    args.data_dir.mkdir(parents=True, exist_ok=True)
    loads(args.dsn, args.data_dir, keys[:args.loads])


if __name__ == "__main__":
    main()
