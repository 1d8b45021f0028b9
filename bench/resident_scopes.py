"""Start-up and first calls with scopes on demand, against the same store held whole.

Builds (once, cached in bench/.cache/resident_scopes_<N>/) a SQLite store of N memories:
``--users`` users of agent ``agent-0`` with N / users memories each, plus ``--shared``
shared ones, texts from CoQA stories (real sentences) with random unit vectors (what is
measured does not depend on what they mean). Then, in this process, opens the store held
whole and by scope (``[retrieval] residency``) and reports the time to open and the memories
held; with scopes, the first Search of ``--probe`` users (their scope cold: loaded by the
call) and their second (warm), each with the query's embedding computed by the model.

    .venv/bin/python -m bench.resident_scopes --data ../shared/data/coqa_dev.json \\
        [--memories 100000] [--users 1000] [--probe 200]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

from bench.resident_bytes import sentences
from bench.results import recorded
from sidecar.api.server_config import ServerConfig
from sidecar.app import App
from sidecar.config import Config, ConfigStore
from sidecar.embedding import Embedder
from sidecar.embedding.config import EmbeddingConfig
from sidecar.embedding.models import identity, model_files
from sidecar.metrics.config import HttpConfig
from sidecar.records import DEFAULT_IMPORTANCE, Memory, MemoryType
from sidecar.retrieval.config import RetrievalConfig
from sidecar.retrieval.contract import SearchQuery
from sidecar.store.db import Database
from sidecar.store.model_repo import MODEL_KEY, ModelRepo
from sidecar.store.repos import Repositories

CACHE = Path(__file__).parent / ".cache"


def build(data_dir: Path, texts: list[str], users: int, shared: int, dim: int) -> None:
    if (data_dir / "ready").exists():
        return
    data_dir.mkdir(parents=True, exist_ok=True)
    db = Database(ServerConfig(data_dir=str(data_dir)).db_path)
    rng = np.random.default_rng(1)
    now = time.time_ns() // 1000
    per_user = (len(texts) - shared) // users
    try:
        repo = Repositories.open(db).memories
        with db.transaction():
            for i, text in enumerate(texts):
                user = "" if i < shared else f"user-{(i - shared) // per_user}"
                vector = rng.standard_normal(dim).astype(np.float32)
                repo.insert(Memory(
                    id=f"m{i}", content=text, type=MemoryType.FACT,
                    importance=DEFAULT_IMPORTANCE[MemoryType.FACT], created_at=now,
                    updated_at=now, last_accessed_at=0, access_count=0, source="bench",
                    channel_id="", agent_id="agent-0" if user else "", forgotten=False,
                    version=1, user_id=user), vector / np.linalg.norm(vector))
            ModelRepo(db).set(MODEL_KEY, identity(EmbeddingConfig().model).to_json())
    finally:
        db.close()
    (data_dir / "ready").write_text("ok\n")


def open_app(data_dir: Path, embedder: Embedder, residency: str) -> tuple[App, float]:
    config = ServerConfig(listen="127.0.0.1:0", data_dir=str(data_dir), http=HttpConfig(""))
    settings = ConfigStore(data_dir / "unused.toml",
                           Config(retrieval=RetrievalConfig(residency=residency)), None)
    begin = time.perf_counter()
    app = App.open(config, embedder=embedder, settings=settings)
    return app, time.perf_counter() - begin


def percentiles(ms: list[float]) -> str:
    return f"{np.percentile(ms, 50):.1f} / {np.percentile(ms, 99):.1f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, required=True, help="CoQA json (coqa_dev.json)")
    parser.add_argument("--memories", type=int, default=100_000)
    parser.add_argument("--users", type=int, default=1000)
    parser.add_argument("--shared", type=int, default=1000)
    parser.add_argument("--probe", type=int, default=200)
    args = parser.parse_args()
    embedder = Embedder(model_files(EmbeddingConfig().model))
    texts = sentences(args.data, args.memories)
    data_dir = CACHE / f"resident_scopes_{args.memories}_{args.users}"
    begin = time.perf_counter()
    build(data_dir, texts, args.users, args.shared, embedder.dim)
    built = time.perf_counter() - begin
    questions = [" ".join(t.split()[:8]) for t in texts[1::97][:args.probe]]
    rows = []
    for residency in ("store", "scopes"):
        app, opened = open_app(data_dir, embedder, residency)
        try:
            held = len(app.retriever.live)  # type: ignore[attr-defined]
            cold: list[float] = []
            warm: list[float] = []
            if residency == "scopes":
                for n, text in enumerate(questions):
                    query = SearchQuery(text=text, agent_id="agent-0",
                                        user_id=f"user-{n % args.users}", limit=10)
                    for into in (cold, warm):
                        t0 = time.perf_counter()
                        app.retriever.search(query)
                        into.append((time.perf_counter() - t0) * 1000)
            stats = app.retriever.resident.stats()  # type: ignore[attr-defined]
            load_ms = 1000 * stats.load_seconds / stats.loads if stats.loads else 0.0
            rows.append((residency, opened, held, cold, warm, load_ms))
        finally:
            app.close()
        (data_dir / "vectors.hnsw").unlink(missing_ok=True)  # each start from the rows alone
    with recorded("resident_scopes"):
        print(f"{args.memories} memories: {args.users} users of one agent, {args.shared} "
              f"shared (store built in {built:.0f} s, cached)\n")
        print("| residency | open (s) | memories held | first Search of a user p50 / p99 ms "
              "| second p50 / p99 ms | scope load, mean ms |\n|---|---|---|---|---|---|")
        for residency, opened, held, cold, warm, load_ms in rows:
            first = percentiles(cold) if cold else "-"
            second = percentiles(warm) if warm else "-"
            print(f"| {residency} | {opened:.2f} | {held} | {first} | {second} | "
                  f"{load_ms:.1f} |")


if __name__ == "__main__":
    main()

