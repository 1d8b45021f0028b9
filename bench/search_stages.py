"""Where a search's time goes after the query embedding: CPU time per stage, in process.

    .venv/bin/python bench/search_stages.py                      # 10k and 100k memories
    .venv/bin/python bench/search_stages.py --sizes 10000 --queries 200

The corpus and queries of ``search_speed.py`` (LongMemEval turns, synthetic above 10,866;
the 470 questions as agent "bench", limit 10), searched through the engine the server uses
(``App.retriever``) with each query's embedding computed beforehand, so every figure is
retrieval after the embedding; the query is embedded again (untimed) right before each
search, so the caches are as cold as a server finds them after its model ran. Times are CPU
time of the searching thread (``time.thread_time_ns``): the load of other processes shows
in them only through shared caches and cores, not as waiting.

Two views:

- engine stages: the laps the engine records on every search (``sidecar.retrieval.stages``),
  read with a CPU clock, and their sum (``after embed``; ``BM25 aside``: without the
  lexical stage, which a server runs beside the model for a short query);
- parts: each piece of work on its own, on the same inputs (warm: no embedding in
  between): query analysis (the analyser's terms), the hnsw k-nn call alone (at the ``ef``
  shown), BM25 scoring of every matching document, hydration of the hits from the mirror,
  their explanations (a ``SourceRank`` per source); and ``reply``, the protobuf
  ``SearchResponse`` built from the result. The exact cosine of the candidate pool is part
  of ``fusion`` (one kernel call).

Beside them: vector recall@20 of the index searched against an exact scan.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
sys.path.insert(0, str(Path(__file__).parent))

import numpy as np  # noqa: E402
from lme_data import load_oracle, questions  # noqa: E402
from search_speed import build, print_table, vector_recall_of  # noqa: E402

from sidecar.api.search_convert import search_response_to_pb  # noqa: E402
from sidecar.api.server_config import ServerConfig  # noqa: E402
from sidecar.app import App  # noqa: E402
from sidecar.config import CONFIG_FILENAME, Config, ConfigStore  # noqa: E402
from sidecar.embedding import Embedder, bundled_model_files  # noqa: E402
from sidecar.embedding.config import EmbeddingConfig  # noqa: E402
from sidecar.embedding.models import FP32  # noqa: E402
from sidecar.retrieval.config import RetrievalConfig  # noqa: E402
from sidecar.retrieval.contract import SearchQuery, SourceRank  # noqa: E402
from sidecar.retrieval.hybrid import HybridRetriever  # noqa: E402
from sidecar.timing import Clock  # noqa: E402

ENGINE = ("vector", "lexical", "graph", "fusion", "hits")


def cpu_us(func: Callable[[], object]) -> float:
    start = time.thread_time_ns()
    func()
    return (time.thread_time_ns() - start) / 1000


def open_app(n: int, embedder: Embedder, ef: int = 0) -> App:
    data_dir = build(n)
    retrieval = RetrievalConfig(parallel_min_memories=10**12)
    if ef:
        retrieval = replace(retrieval, vector=replace(retrieval.vector, hnsw_ef_search=ef))
    config = Config(retrieval=retrieval, embedding=EmbeddingConfig(FP32))
    settings = ConfigStore(data_dir / CONFIG_FILENAME, config, None)
    app = App.open(ServerConfig(listen="127.0.0.1:0", data_dir=str(data_dir)),
                   embedder=embedder, settings=settings)
    app.warm_up()
    if app.vectors is not None and not app.vectors.wait_ready(1800) and app.vectors.building:
        raise RuntimeError("vector index not ready")  # (exact search below its threshold)
    return app


def profile(n: int, texts: list[str], embedder: Embedder, rounds: int, ef: int
            ) -> dict[str, str]:
    app = open_app(n, embedder, ef)
    try:
        engine = app.retriever
        assert isinstance(engine, HybridRetriever)
        engine.clock = lambda: Clock(time.thread_time_ns)
        queries = [SearchQuery(t, agent_id="bench", limit=10, embedding=embedder.embed_query(t))
                   for t in texts]
        stage: dict[str, list[float]] = {s: [] for s in (
            *ENGINE, "after embed", "BM25 aside", "reply")}
        for _ in range(rounds):
            for q in queries:
                embedder.embed_query(q.text)  # untimed: leaves the caches as a server's are
                result = engine.search(q)
                t = result.timings_us
                for s in ENGINE:
                    stage[s].append(t.get(s, 0))
                stage["after embed"].append(t["total"] - t.get("embed", 0))
                # What a server's short query waits for: its BM25 runs beside the model.
                stage["BM25 aside"].append(t["total"] - t.get("embed", 0) - t["lexical"])
                stage["reply"].append(cpu_us(lambda r=result: search_response_to_pb(r, False)))
        parts = _parts(engine, queries, rounds)
        recall = vector_recall_of(app.vectors, [q.embedding for q in queries
                                                if q.embedding is not None])
        hnsw = app.vectors.hnsw if app.vectors is not None else None
    finally:
        app.close()
    row = {"memories": f"{n:,}", "ef": str(hnsw.ef_search if hnsw else "exact"),
           "recall@20": f"{recall:.3f}"}
    for name, values in (*stage.items(), *parts.items()):
        row[name] = (f"{np.percentile(values, 50):.0f} / {np.percentile(values, 95):.0f}"
                     if values else "")  # no hnsw k-nn below the exact threshold
    return row


def _parts(engine: HybridRetriever, queries: list[SearchQuery], rounds: int
           ) -> dict[str, list[float]]:
    """Each piece of work alone, CPU microseconds per query."""
    lexical, live = engine.lexical, engine.live
    hnsw = getattr(engine.vectors, "hnsw", None)
    out: dict[str, list[float]] = {k: [] for k in (
        "query analysis", "hnsw knn", "bm25 scores", "hydrate", "explain")}
    for _ in range(rounds):
        for q in queries:
            assert q.embedding is not None
            out["query analysis"].append(cpu_us(lambda q=q: lexical.analyzer.query_terms(q.text)))
            if hnsw is not None:
                row = np.ascontiguousarray(q.embedding, np.float32).reshape(1, -1)
                out["hnsw knn"].append(cpu_us(lambda r=row: hnsw._index.knn_query(r, k=20)))
            out["bm25 scores"].append(cpu_us(lambda q=q: lexical.scores(q.text)))
            hits = engine.search(q).hits
            seqs = [h.memory.seq for h in hits]
            out["hydrate"].append(cpu_us(lambda s=seqs: [live.get(x) for x in s]))
            ranks = [[r.rank for r in h.ranks] for h in hits]
            names = [r.name for r in hits[0].ranks] if hits else []
            weights = [r.weight for r in hits[0].ranks] if hits else []
            out["explain"].append(cpu_us(lambda r=ranks, n=names, w=weights: [
                tuple(map(SourceRank, n, x, w)) for x in r]))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--queries", type=int, default=470)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--ef", type=int, nargs="+", default=[0],
                        help="hnsw ef_search values to compare (0: the configured one)")
    args = parser.parse_args()
    texts = [q.text for q in questions(load_oracle())][: args.queries]
    embedder = Embedder(bundled_model_files(), **ServerConfig().embedder_options())
    rows = [profile(n, texts, embedder, args.rounds, ef) for n in args.sizes for ef in args.ef]
    print(f"\n{len(texts)} queries x {args.rounds} rounds; CPU microseconds p50 / p95 "
          f"(load average {os.getloadavg()[0]:.1f})\n")
    print_table(rows)


if __name__ == "__main__":
    from results import recorded  # bench/ is on sys.path

    with recorded("search_stages"):
        main()
