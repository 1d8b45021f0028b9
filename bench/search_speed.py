"""Search latency over gRPC at 10,000 and 100,000 memories, with the per-stage breakdown.

    .venv/bin/python bench/search_speed.py                 # both sizes
    .venv/bin/python bench/search_speed.py --sizes 100000 --queries 300
    .venv/bin/python bench/search_speed.py --fusion both   # score fusion and RRF side by side

Corpus: the LongMemEval turns (10,866 real texts, real MiniLM embeddings, cached) and, above
that, synthetic memories: the first half of one turn joined to the second half of another,
with the normalised sum of the two turns' embeddings as its vector (no re-embedding; the
vector stage cost does not depend on where a vector came from). Every 10th memory is a
DECISION (importance 0.8: a graph seed) and there is one random edge per 5 memories, so graph
expansion runs as well. Queries: the 470 LongMemEval questions, as agent "bench" (scope
filter on), limit 10, default search_limit. Latency is measured at the client; the server's
debug timings give the query embedding and each stage after it. Beside them: the recall@20 of
the vector index the server searched (hnsw from ``exact_threshold`` on) against an exact scan.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from dataclasses import replace
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
sys.path.insert(0, str(Path(__file__).parent))

import numpy as np  # noqa: E402
from lme_data import CACHE, cached_embeddings, load_oracle, pooled_turns, questions  # noqa: E402
from memsidecar.v1 import store_pb2  # noqa: E402
from store_build import Served, build_store  # noqa: E402

from sidecar.api.server_config import ServerConfig  # noqa: E402
from sidecar.embedding import Embedder, bundled_model_files  # noqa: E402
from sidecar.records import Edge, MemoryType, Relation  # noqa: E402
from sidecar.retrieval.config import FUSIONS, RetrievalConfig  # noqa: E402
from sidecar.retrieval.vector.adaptive import AdaptiveVectorIndex  # noqa: E402
from sidecar.store.db import Database  # noqa: E402
from sidecar.store.edges import EdgeRepo  # noqa: E402

STAGES = ("embed_us", "vector_us", "lexical_us", "graph_us", "fusion_us", "cosine_us", "hits_us")


def corpus(n: int) -> tuple[list[str], list[str], np.ndarray]:
    data = load_oracle()
    turns = pooled_turns(data, ("user", "assistant"))
    vectors = cached_embeddings([t.content for t in turns], "lme_turns_all")
    texts = [t.content for t in turns][:n]
    out = vectors[:n]
    rng = np.random.default_rng(n)
    extra = n - len(texts)
    if extra > 0:
        a, b = rng.integers(0, len(turns), extra), rng.integers(0, len(turns), extra)
        for i, j in zip(a.tolist(), b.tolist(), strict=True):
            x, y = turns[i].content.split(), turns[j].content.split()
            texts.append(" ".join(x[: len(x) // 2 + 1] + y[len(y) // 2:]))
        mixed = vectors[a] + vectors[b]
        mixed /= np.linalg.norm(mixed, axis=1, keepdims=True)
        out = np.vstack([out, mixed.astype(np.float32)])
    return [f"m{i}" for i in range(n)], texts, out


def build(n: int) -> Path:
    data_dir = CACHE / f"speed_{n}"
    ids, texts, vectors = corpus(n)
    build_store(data_dir, ids, texts, vectors)
    with_graph(data_dir, ids)
    return data_dir


def with_graph(data_dir: Path, ids: list[str]) -> None:
    """Once per store: every 10th memory a DECISION (importance 0.8: a graph seed) and one
    random edge per 5 memories, so graph expansion runs."""
    n = len(ids)
    db = Database(data_dir / "memsidecar.sqlite3")
    try:
        edges = EdgeRepo(db)
        if edges.count() == 0:
            rng = np.random.default_rng(7)
            with db.transaction():
                db.execute("UPDATE memories SET type = ?, importance = 0.8 WHERE seq % 10 = 0",
                           (int(MemoryType.DECISION),))
                for s, t, r in zip(rng.integers(0, n, n // 5).tolist(),
                                   rng.integers(0, n, n // 5).tolist(),
                                   rng.integers(1, 7, n // 5).tolist(), strict=True):
                    if s != t:
                        edges.upsert(Edge(ids[s], ids[t], Relation(r), 0.5, 0))
    finally:
        db.close()


def pct(values: list[float], q: float) -> float:
    return float(np.percentile(values, q))


def vector_recall(served: Served, queries: list[np.ndarray], k: int = 20) -> float:
    return vector_recall_of(served.vectors, queries, k)


def vector_recall_of(index: AdaptiveVectorIndex | None, queries: list[np.ndarray],
                     k: int = 20) -> float:
    """Mean recall@k of the vector index (hnsw above its threshold) against an exact scan of
    every live vector."""
    assert index is not None
    everything = lambda labels: np.ones(len(labels), bool)  # noqa: E731
    found = 0
    for q in queries:
        labels, _ = index.search(q, k)
        all_labels, scores = index.scan(q, everything)
        exact = all_labels[np.argsort(-scores, kind="stable")[:k]]
        found += len(set(labels.tolist()) & set(exact.tolist()))
    return found / (k * len(queries))


def run(n: int, queries: list[str], embedder: Embedder, cfg: RetrievalConfig) -> dict[str, str]:
    served = Served(build(n), embedder, cfg)
    try:
        for q in queries[:20]:  # warm the channel and caches
            served.store.Search(store_pb2.SearchRequest(query=q, agent_id="bench"))
        client, stage = [], {s: [] for s in (*STAGES, "after_embed_us", "total_us")}
        for q in queries:
            start = time.perf_counter()
            reply = served.store.Search(store_pb2.SearchRequest(query=q, agent_id="bench",
                                                                debug=True))
            client.append((time.perf_counter() - start) * 1000)
            d = reply.debug
            for s in STAGES:
                stage[s].append(getattr(d, s) / 1000)
            stage["total_us"].append(d.total_us / 1000)
            stage["after_embed_us"].append((d.total_us - d.embed_us) / 1000)
        recall = vector_recall(served, [embedder.embed_query(q) for q in queries])
    finally:
        served.close()
    row = {"memories": f"{n:,}", "fusion": cfg.fusion,
           "parallel": "on" if cfg.parallel_min_memories <= n else "off",
           "vectors": str(served.vector_stats.get("engine", "?")),
           "open / ready s": f"{served.open_s:.1f} / {served.ready_s:.1f}",
           "vector recall@20": f"{recall:.3f}",
           "client p50/p95 ms": f"{pct(client, 50):.2f} / {pct(client, 95):.2f}"}
    for s, values in stage.items():
        row[s.removesuffix("_us") + " p50/p95"] = f"{pct(values, 50):.2f} / {pct(values, 95):.2f}"
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--queries", type=int, default=470)
    parser.add_argument("--parallel", choices=("off", "on", "both"), default="both")
    parser.add_argument("--fusion", choices=("default", *FUSIONS, "both"), default="default")
    args = parser.parse_args()
    queries = [q.text for q in questions(load_oracle())][: args.queries]
    embedder = Embedder(bundled_model_files(), **ServerConfig().embedder_options())
    modes = {"off": [False], "on": [True], "both": [False, True]}[args.parallel]
    fusions = {"default": [RetrievalConfig().fusion], "both": list(FUSIONS)}.get(
        args.fusion, [args.fusion])
    rows = [run(n, queries, embedder, replace(
                RetrievalConfig(), parallel_min_memories=0 if p else 10**12, fusion=f))
            for n in args.sizes for p in modes for f in fusions]
    print(f"\n{len(queries)} queries each, times in ms (server stages from Search debug)\n")
    print_table(rows)


def print_table(rows: list[dict[str, str]]) -> None:
    """``rows`` as a markdown table, the first row's keys as its columns."""
    cols = list(rows[0])
    print("| " + " | ".join(cols) + " |")
    print("|" + "---|" * len(cols))
    for r in rows:
        print("| " + " | ".join(r[c] for c in cols) + " |")


if __name__ == "__main__":
    from results import recorded  # bench/ is on sys.path

    with recorded("search_speed"):
        main()
