"""Make a large store: N synthetic memories of a fleet with their vectors, at bulk-insert speed.

Writes ``--memories`` memories owned by users ``user-0``..``user-{U-1}`` (user ``u`` talks to
``agent-{u % A}``), agents ``agent-0``..``agent-{A-1}`` (their general knowledge) and the
shared scope, with a few edges each, into an empty SQLite store under ``--data-dir`` or the
PostgreSQL database ``--dsn``: the store's own schema and bulk insert path, the embedding
model recorded as the vectors' (``--model``, default the configured default), so
``memsidecar serve`` opens it as any store and re-embeds nothing; no index files are written
(the server builds them on its first start). Texts and vectors: ``bench/fleet_content.py``
(CoQA story sentences, ``--data``; the sentences are embedded once and cached in
``bench/.cache/``). The spec is recorded in the store (meta ``bench.fleet``) for the bench.

Run:  .venv/bin/python -m bench.fleet_store --memories 1000000 --users 10000 --agents 10
      --data-dir DIR | --dsn postgresql://... [--shared 300] [--per-agent 50] [--seed 7]
      [--data ../shared/data/coqa_dev.json]
Writes bench/results/fleet_store_build_<N>.json (the build's rate; ``_postgres`` after N
with ``--dsn``).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from bench.fleet_content import Fleet, Pool, generate, load_pool
from bench.results import ROOT, write_results
from sidecar.api.server_config import ServerConfig
from sidecar.embedding import Embedder
from sidecar.embedding.config import EmbeddingConfig
from sidecar.embedding.models import MODEL_NAMES, identity, model_files
from sidecar.store.contract import SqlStore
from sidecar.store.db import Database
from sidecar.store.model_repo import MODEL_KEY, ModelRepo
from sidecar.store.repos import Repositories

FLEET_KEY = "bench.fleet"  # meta: the Fleet spec (JSON) the store was made from
CACHE = ROOT / "bench" / ".cache"
BUILD_CACHE_KB = 512 * 1024  # SQLite's page cache while building (random id index inserts)
COQA = ROOT.parent / "shared" / "data" / "coqa_dev.json"


def write(db: SqlStore, fleet: Fleet, pool: Pool, model: str,
          progress: Callable[[int], None] = lambda _: None) -> dict[str, int]:
    """Fill the empty store ``db``; the memories and edges written. The spec is recorded
    last: a store without it was not finished."""
    repos = Repositories.open(db)
    if repos.memories.count(include_forgotten=True):
        raise SystemExit("the store already holds memories: give an empty data dir or database")
    models = ModelRepo(db)
    models.set(MODEL_KEY, identity(model).to_json())  # first: no row of another model's
    written = {"memories": 0, "edges": 0}
    for memories, vectors, edges in generate(fleet, pool):
        repos.memories.insert_many(memories, vectors)
        repos.edges.upsert_many(edges)
        written["memories"] += len(memories)
        written["edges"] += len(edges)
        progress(written["memories"])
    models.set(FLEET_KEY, json.dumps(dataclasses.asdict(fleet)))  # last: the store is whole
    return written


def recorded_fleet(db: SqlStore) -> Fleet:
    """The spec a store was made from (``write``)."""
    text = ModelRepo(db).get(FLEET_KEY)
    if text is None:
        raise SystemExit("not a store made by bench.fleet_store, or one it did not finish "
                         "(no meta 'bench.fleet')")
    return Fleet(**json.loads(text))


def open_target(data_dir: Path | None, dsn: str) -> SqlStore:
    if dsn:
        from sidecar.store.postgres.db import PgDatabase  # psycopg only when asked for

        return PgDatabase(dsn)
    assert data_dir is not None
    db = Database(ServerConfig(data_dir=str(data_dir)).db_path)
    db.execute(f"PRAGMA cache_size = -{BUILD_CACHE_KB}")  # this connection's: the indexes' pages
    return db


def pool_for(data: Path, model: str, cache: Path, stories: int = 0) -> Pool:
    embedder = Embedder(model_files(model), **ServerConfig().embedder_options())  # type: ignore[arg-type]
    return load_pool(data, embedder, cache, stories)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--memories", type=int, required=True)
    p.add_argument("--users", type=int, required=True)
    p.add_argument("--agents", type=int, required=True)
    target = p.add_mutually_exclusive_group(required=True)
    target.add_argument("--data-dir", type=Path, help="a new SQLite store in this data dir")
    target.add_argument("--dsn", help="an empty PostgreSQL database")
    defaults = Fleet(0, 0, 0)
    p.add_argument("--shared", type=int, default=defaults.shared)
    p.add_argument("--per-agent", type=int, default=defaults.per_agent,
                   help="general memories of each agent (no user)")
    p.add_argument("--stories-per-user", type=int, default=defaults.stories_per_user,
                   help="CoQA stories each scope's texts come from")
    p.add_argument("--edges", type=float, default=defaults.edges_per_memory,
                   help="mean edges from each user memory to earlier ones")
    p.add_argument("--days", type=int, default=defaults.days)
    p.add_argument("--seed", type=int, default=defaults.seed)
    p.add_argument("--model", default=EmbeddingConfig().model, choices=MODEL_NAMES)
    p.add_argument("--data", type=Path, default=COQA, help="CoQA json (coqa_dev.json)")
    p.add_argument("--stories", type=int, default=defaults.stories,
                   help="use the first N stories (0: all)")
    p.add_argument("--cache", type=Path, default=CACHE, help="where the pool's vectors are kept")
    return p


def build(args: argparse.Namespace) -> dict[str, object]:
    """Make the store ``args`` ask for; what was written and how fast."""
    fleet = Fleet(args.memories, args.users, args.agents, args.shared, args.per_agent,
                  args.stories_per_user, args.edges, args.days, args.seed, args.stories)
    fleet.check()
    begin = time.perf_counter()
    pool = pool_for(args.data, args.model, args.cache, fleet.stories)
    pooled = time.perf_counter() - begin
    db = open_target(args.data_dir, args.dsn or "")
    start = time.perf_counter()

    def progress(done: int) -> None:
        rate = done / (time.perf_counter() - start)
        print(f"{done:,} memories written ({rate:,.0f}/s)", flush=True)

    try:
        written = write(db, fleet, pool, args.model, progress)
    finally:
        db.close()
    seconds = time.perf_counter() - start
    return {"fleet": dataclasses.asdict(fleet), "backend": "postgres" if args.dsn else "sqlite",
            "model": args.model, "pool_sentences": len(pool.sentences),
            "pool_s": round(pooled, 1), "write_s": round(seconds, 1),
            "memories_per_s": round(written["memories"] / seconds), **written}


def main(argv: Sequence[str] | None = None) -> None:
    cli = parser()
    args = cli.parse_args(argv)
    try:
        result = build(args)
    except ValueError as err:  # the spec does not add up
        cli.error(str(err))
    print(json.dumps(result))
    write_results(f"fleet_store_build_{args.memories}{'_postgres' if args.dsn else ''}", result)


if __name__ == "__main__":
    main()
