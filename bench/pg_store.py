"""The PostgreSQL shared store against SQLite, on a throwaway local cluster.

1. Inject p50/p99 at --size memories: the same queries on a SQLite sidecar and a PostgreSQL
   sidecar, interleaved call by call (a fresh channel every 10 turns; each call's writes after
   its reply are done before the next call starts), in-process; --rounds
   times (fresh channels each round), with the median of the rounds' p50s and their ratio.
   Then the round trips to PostgreSQL per Inject on the calling thread (psycopg's waits in
   which an answer was read; counted in a pass of its own).
2. Write-to-visible latency across sidecars: a memory upserted on A, timed until it is in
   B's indexes; sequential (one writer) and concurrent (4 writers on two sidecars).
3. Import rate (import_stream, batches of 256) on each backend.

Stored vectors are random unit vectors over synthetic texts (latency does not depend on what
they mean; an Inject then finds nothing above the floor and injects nothing), or with --embed
the model's vectors of those texts (Injects carry items: their rows and access records are
written too); queries and written memories are embedded by the real model.

Run:  .venv/bin/python -m bench.pg_store [--size 10000] [--injects 300] [--writes 200]
      .venv/bin/python -m bench.pg_store --size 2000 --rounds 5 --inject-only [--embed]
          [--ab-unprepared]
Writes bench/results/pg_store.json.
"""

from __future__ import annotations

import argparse
import os
import random
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

from bench.pg_trips import round_trips
from bench.results import write_results
from sidecar.api.server_config import ServerConfig
from sidecar.app import App
from sidecar.config import CONFIG_FILENAME, Config, ConfigStore
from sidecar.embedding import Embedder
from sidecar.embedding.config import EmbeddingConfig
from sidecar.embedding.models import identity, model_files
from sidecar.injection.types import InjectRequest
from sidecar.metrics.config import HttpConfig
from sidecar.records import DEFAULT_IMPORTANCE, Memory, MemoryDraft, MemoryType
from sidecar.store.config import StoreConfig
from sidecar.store.copy import copy_store
from sidecar.store.db import Database
from sidecar.store.model_repo import MODEL_KEY, ModelRepo
from sidecar.store.postgres.db import PgDatabase
from sidecar.store.postgres.prepared import PreparedStatements
from sidecar.store.repos import Repositories
from tests.pg.cluster import Cluster

WORDS = ("deploy billing search cluster mobile release token cache queue database backup "
         "invoice customer latency alert runbook schema migration budget roadmap incident "
         "review config secret storage network gateway metrics dashboard pipeline worker "
         "tenant region failover replica index shard quota team owner oncall weekly").split()


def sentence(rng: random.Random) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(8, 16))).capitalize()


def build(sqlite_path: Path, size: int, embedder: Embedder, model: str, embed: bool) -> None:
    rng, vectors = random.Random(7), np.random.default_rng(7)
    texts = [sentence(rng) for _ in range(size)]
    if embed:
        embedded = embedder.embed(texts)
    db = Database(sqlite_path)
    repos = Repositories.open(db)
    with db.transaction():
        for n, text in enumerate(texts):
            v = embedded[n] if embed else vectors.standard_normal(embedder.dim).astype(np.float32)
            repos.memories.insert(Memory(
                id=f"m{n}", content=text, type=MemoryType.FACT,
                importance=DEFAULT_IMPORTANCE[MemoryType.FACT], created_at=n + 1,
                updated_at=n + 1, last_accessed_at=0, access_count=0, source="bench",
                channel_id="", agent_id="", forgotten=False, version=1), v / np.linalg.norm(v))
        ModelRepo(db).set(MODEL_KEY, identity(model).to_json())
    db.close()


def open_app(data_dir: Path, embedder: Embedder, store: StoreConfig) -> App:
    config = ServerConfig(listen="127.0.0.1:0", data_dir=str(data_dir), http=HttpConfig(""))
    settings = ConfigStore(data_dir / CONFIG_FILENAME,
                           Config(store=store, embedding=EmbeddingConfig(embedder.name)), None)
    app = App.open(config, embedder=embedder, settings=settings)
    if app.vectors is not None:
        app.vectors.wait_ready(1800)
    return app


def pct(values: list[float], q: float) -> float:
    return round(float(np.percentile(values, q)), 2)


def injects(apps: dict[str, App], count: int, tag: str = "",
            seed: int = 11) -> dict[str, dict[str, float]]:
    rng = random.Random(seed)
    queries = [sentence(rng) + "?" for _ in range(count)]
    timings: dict[str, list[float]] = {name: [] for name in apps}
    items: dict[str, int] = {name: 0 for name in apps}
    for n, query in enumerate(queries):
        names = list(apps)
        order = names[n % len(names):] + names[:n % len(names)]  # each first in turn
        for name in order:
            start = time.perf_counter()
            done = apps[name].injector.inject(InjectRequest("", f"{name}{tag}-{n // 10}", query))
            timings[name].append((time.perf_counter() - start) * 1000)
            items[name] += len(done.items)
            # What a call writes after its reply (SQLite's state, access records) is written
            # before the next call, as between an agent's turns: not in another call's time.
            apps[name].injector.states.writer.flush()
    warm = min(20, count // 2)  # the first calls warm the caches: left out
    return {name: {"p50_ms": pct(t[warm:], 50), "p99_ms": pct(t[warm:], 99), "calls": len(t),
                   "items_per_call": round(items[name] / len(t), 2)}
            for name, t in timings.items()}


def rounds(apps: dict[str, App], count: int, times: int) -> dict[str, object]:
    """``injects`` ``times`` over; the median p50 of each backend and the median ratio to
    SQLite's (of each PostgreSQL sidecar: ``postgres``, and with --ab-unprepared
    ``postgres_unprepared``)."""
    runs = [injects(apps, count, tag=f"r{r}", seed=11 + r) for r in range(times)]
    shared = [name for name in apps if name != "sqlite"]
    ratios = {name: [run[name]["p50_ms"] / run["sqlite"]["p50_ms"] for run in runs]
              for name in shared}
    print("inject rounds:", [tuple(run[name]["p50_ms"] for name in apps) for run in runs],
          "of", list(apps))
    p50s = {name: [run[name]["p50_ms"] for run in runs] for name in apps}
    result: dict[str, object] = {
        "rounds": runs,
        "median_p50_ms": {name: round(float(np.median(v)), 2) for name, v in p50s.items()},
        "ratios": [round(r, 3) for r in ratios["postgres"]],
        "median_ratio": round(float(np.median(ratios["postgres"])), 3)}
    for name in shared[1:]:
        result[f"ratios_{name}"] = [round(r, 3) for r in ratios[name]]
        result[f"median_ratio_{name}"] = round(float(np.median(ratios[name])), 3)
    return result


def trips_per_inject(app: App, count: int) -> float:
    """Round trips to PostgreSQL per Inject on the calling thread (``bench.pg_trips``)."""
    rng = random.Random(5)
    with round_trips() as answered:
        for n in range(count):
            app.injector.inject(InjectRequest("", f"trips-{n // 10}", sentence(rng) + "?"))
    return round(answered() / count, 2)


def visible(writers: list[App], reader: App, writes: int, threads: int) -> dict[str, float]:
    """Upserts spread over ``threads`` threads on ``writers``; ms from each upsert's return
    to the memory being in ``reader``'s indexes."""
    latencies: list[float] = []
    lock = threading.Lock()
    rng = random.Random(threads)
    texts = [f"{sentence(rng)} (note {threads}-{n})" for n in range(writes)]

    def work(index: int) -> None:
        app = writers[index % len(writers)]
        for text in texts[index::threads]:
            memory_id = app.memories.upsert(MemoryDraft(text, MemoryType.FACT)).memory.id
            done = time.perf_counter()
            while reader.retriever.live.seq_of(memory_id) is None:
                time.sleep(0.0005)
            with lock:
                latencies.append((time.perf_counter() - done) * 1000)

    pool = [threading.Thread(target=work, args=(i,)) for i in range(threads)]
    for thread in pool:
        thread.start()
    for thread in pool:
        thread.join()
    return {"p50_ms": pct(latencies, 50), "p99_ms": pct(latencies, 99),
            "max_ms": round(max(latencies), 2), "writes": len(latencies)}


def import_rate(app: App, count: int, tag: str) -> float:
    rng = random.Random(len(tag))
    drafts = [MemoryDraft(f"{sentence(rng)} ({tag} {n})", MemoryType.FACT) for n in range(count)]
    start = time.perf_counter()
    summary = app.memories.import_stream(drafts)
    return round(summary.stored / (time.perf_counter() - start), 1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--size", type=int, default=10_000)
    parser.add_argument("--injects", type=int, default=300)
    parser.add_argument("--writes", type=int, default=200)
    parser.add_argument("--imports", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=1, help="Inject rounds (median kept)")
    parser.add_argument("--inject-only", action="store_true",
                        help="Inject timings and round trips only (no writes, no imports)")
    parser.add_argument("--embed", action="store_true",
                        help="store the model's vectors (Injects carry items)")
    parser.add_argument("--ab-unprepared", action="store_true",
                        help="a third sidecar on the same store whose batches are sent as "
                             "plain statements (none prepared), interleaved with the others")
    args = parser.parse_args()
    name = EmbeddingConfig().model
    embedder = Embedder(model_files(name), **ServerConfig().embedder_options())  # type: ignore[arg-type]
    cluster = Cluster()
    cluster.start()
    root = Path(tempfile.mkdtemp(prefix="pgbench"))
    apps: list[App] = []
    try:
        build(root / "sqlite" / "memsidecar.sqlite3", args.size, embedder, name, args.embed)
        dsn = cluster.new_database()
        start = time.perf_counter()
        source, target = Database(root / "sqlite" / "memsidecar.sqlite3"), PgDatabase(dsn)
        copy_store(source, target, append=False, progress=lambda *_: None)
        migrate_s = time.perf_counter() - start
        source.close()
        target.close()
        pg = StoreConfig(backend="postgres", dsn=dsn)
        lite = open_app(root / "sqlite", embedder, StoreConfig())
        a, b, c = (open_app(root / n, embedder, pg) for n in ("a", "b", "c"))
        apps += [lite, a, b, c]
        timed = {"sqlite": lite, "postgres": a}
        if args.ab_unprepared:
            timed["postgres_unprepared"] = unprepared = open_app(root / "d", embedder, pg)
            apps.append(unprepared)
            assert isinstance(unprepared.db, PgDatabase)
            unprepared.db.prepared = PreparedStatements(0)
        result: dict[str, object] = {
            "size": args.size, "embed": args.embed, "load_before": os.getloadavg(),
            "migrate_rows_per_s": round(args.size / migrate_s),
            "inject": rounds(timed, args.injects, args.rounds),
            "round_trips_per_inject": trips_per_inject(a, min(args.injects, 100)),
        }
        assert isinstance(a.db, PgDatabase)
        result["prepared"] = {"preparing_round_trips": a.db.prepared.preparations,
                              "batches_resent_plainly": a.db.prepared.resent}
        if not args.inject_only:
            result.update({
                "visible_sequential": visible([a], b, args.writes, 1),
                "visible_concurrent": visible([a, c], b, args.writes, 4),
                "import_per_s": {"sqlite": import_rate(lite, args.imports, "sqlite"),
                                 "postgres": import_rate(a, args.imports, "postgres")},
            })
        result["load_after"] = os.getloadavg()
        print(result)
        write_results("pg_store", result)
    finally:
        for app in apps:
            app.close()
        cluster.remove()


if __name__ == "__main__":
    main()
