"""Vector index benchmark: exact numpy vs hnswlib at 10,000 and 100,000 vectors.

Run: .venv/bin/python bench/bench_vector_index.py [--sizes 10000,100000] [--queries 300]

Data. Real all-MiniLM-L6-v2 embeddings (the bundled ONNX model) of docstring sentences of
the standard library and numpy (tests/retrieval/sentences.py); 300 held-out sentences are the
queries. Embeddings are cached in bench/.cache/. Above the number of real sentences (~12.5k)
the rest are synthetic: a random real embedding plus Gaussian noise (cosine ~0.8 to its
source), renormalised -- clustered like the real ones, not a uniform sphere.

Each size goes through the real code path: the rows are written to a fresh SQLite file
(MemoryRepo), ``open_vector_index`` finds no saved index and builds one (build time, then
the automatic save), ``close``; ``open_vector_index`` again loads the saved index (restart
time; the "load" column is the checksum comparison plus hnswlib's load). Then search
latency p50/p95 of exact (DenseVectors) and hnsw at k=20/50, recall@50 against exact, an
``ef`` sweep, filtered searches through AdaptiveVectorIndex, and the exact-search latency by
size that sets ``exact_threshold``.
"""

from __future__ import annotations

import argparse
import hashlib
import logging
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

from sidecar.records import Memory, MemoryType  # noqa: E402
from sidecar.retrieval.vector.adaptive import (  # noqa: E402
    AdaptiveVectorIndex,
    VectorConfig,
    build_hnsw,
    open_vector_index,
)
from sidecar.retrieval.vector.exact import DenseVectors  # noqa: E402
from sidecar.store.db import Database  # noqa: E402
from sidecar.store.memories import MemoryRepo  # noqa: E402
from sidecar.store.repos import Repositories  # noqa: E402
from tests.retrieval.sentences import docstring_sentences, stdlib_modules  # noqa: E402
from tests.retrieval.synthetic import normalise  # noqa: E402

CACHE = ROOT / "bench" / ".cache"
NUMPY_MODULES = ["numpy", "numpy.linalg", "numpy.random", "numpy.fft", "numpy.ma",
                 "numpy.polynomial", "numpy.char", "numpy.strings", "numpy.lib", "numpy.testing",
                 "numpy.dtypes", "numpy.exceptions"]
EF_SWEEP = (32, 48, 64, 96, 128, 192, 256)
EXACT_SIZES = (1_000, 2_000, 5_000, 10_000, 20_000, 50_000, 100_000)
HNSW_SIZES_MAX = 20_000  # the hnsw column is built here; 10k and 100k are above


def real_embeddings(queries: int) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """(documents, queries, document texts): MiniLM embeddings, cached by text content."""
    texts = docstring_sentences(stdlib_modules() + NUMPY_MODULES)
    key = hashlib.blake2b("\n".join(texts).encode(), digest_size=8).hexdigest()
    path = CACHE / f"minilm_docstrings_{key}.npy"
    if path.exists():
        vectors = np.load(path)
    else:
        from sidecar.embedding import Embedder, bundled_model_files

        embedder = Embedder(bundled_model_files())
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        print(f"embedding {len(texts)} sentences (once; cached in {path.name}) ...", flush=True)
        start = time.perf_counter()
        vectors = np.zeros((len(texts), 384), dtype=np.float32)
        vectors[order] = embedder.embed([texts[i] for i in order])
        print(f"  {time.perf_counter() - start:.0f} s", flush=True)
        CACHE.mkdir(parents=True, exist_ok=True)
        np.save(path, vectors)
    shuffled = np.random.default_rng(0).permutation(len(texts))
    q, d = shuffled[:queries], shuffled[queries:]
    return vectors[d], vectors[q], [texts[i] for i in d]


def dataset(n: int, docs: np.ndarray, texts: list[str]) -> tuple[np.ndarray, list[str]]:
    if n <= len(docs):
        return docs[:n], texts[:n]
    rng = np.random.default_rng(42)
    extra = n - len(docs)
    source = rng.integers(0, len(docs), extra)
    noise = rng.standard_normal((extra, docs.shape[1])).astype(np.float32) * (0.75 / 19.6)
    synthetic = normalise(docs[source] + noise)
    return np.vstack([docs, synthetic]), texts + [f"synthetic {i}" for i in range(extra)]


def write_sqlite(path: Path, vectors: np.ndarray, texts: list[str]) -> MemoryRepo:
    db = Database(path)
    repo = Repositories.open(db).memories
    with db.transaction():
        for i, (vector, text) in enumerate(zip(vectors, texts, strict=True)):
            repo.insert(Memory(
                id=f"m{i}", content=text, type=MemoryType.FACT, importance=0.6, created_at=i,
                updated_at=i, last_accessed_at=0, access_count=0, source="bench", channel_id="",
                agent_id="", forgotten=False, version=1), vector)
    return repo


def timed(fn: Callable[[np.ndarray], object], queries: np.ndarray) -> tuple[float, float]:
    """(p50, p95) in ms of fn(query) over the queries (after one warm-up call)."""
    fn(queries[0])
    times = []
    for q in queries:
        start = time.perf_counter()
        fn(q)
        times.append(time.perf_counter() - start)
    ms = np.array(times) * 1000
    return float(np.percentile(ms, 50)), float(np.percentile(ms, 95))


def recall(search: Callable[..., tuple[np.ndarray, np.ndarray]], exact: DenseVectors,
           queries: np.ndarray, k: int, accept: Callable[[np.ndarray], np.ndarray] | None = None,
           ) -> float:
    hits = []
    for q in queries:
        want = exact.search(q, k, accept)[0]
        hits.append(len(set(search(q, k, accept)[0].tolist()) & set(want.tolist())) / len(want))
    return float(np.mean(hits))


class Events(logging.Handler):
    """Collects the vector index's own log records (build/save/load timings)."""

    def __init__(self) -> None:
        super().__init__()
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)

    def last(self, message: str) -> logging.LogRecord:
        return [r for r in self.records if r.getMessage() == message][-1]


def bench_size(n: int, docs: np.ndarray, texts: list[str], queries: np.ndarray,
               events: Events) -> None:
    vectors, names = dataset(n, docs, texts)
    config = VectorConfig(exact_threshold=1)
    with tempfile.TemporaryDirectory(dir=CACHE) as tmp:
        repo = write_sqlite(Path(tmp) / "memsidecar.sqlite3", vectors, names)
        start = time.perf_counter()
        index = open_vector_index(tmp, repo, config, vectors.shape[1], wait=True)
        first_open = time.perf_counter() - start
        built, saved = events.last("vector index built"), events.last("vector index saved")
        index.close()
        start = time.perf_counter()
        index = open_vector_index(tmp, repo, config, vectors.shape[1])
        reopen = time.perf_counter() - start
        loaded = events.last("vector index loaded")
        assert index.hnsw is not None, "the saved index was not loaded"
        size_mb = (Path(tmp) / "vectors.hnsw").stat().st_size / 1e6
        print(f"\n## {n:,} vectors ({'real' if n <= len(docs) else 'real + synthetic'})")
        print(f"first start (SQLite read + build + save): {first_open:.1f} s; "
              f"build {built.__dict__['elapsed_s']:.1f} s with {built.__dict__['threads']} "
              f"thread(s); save {saved.__dict__['elapsed_ms'] / 1000:.2f} s ({size_mb:.0f} MB)")
        print(f"restart (SQLite read + checks + load): {reopen:.2f} s; "
              f"checks + hnswlib load {loaded.__dict__['elapsed_ms'] / 1000:.2f} s")
        search_tables(index, vectors, queries)
        index.close()


def search_tables(index: AdaptiveVectorIndex, vectors: np.ndarray, queries: np.ndarray) -> None:
    hnsw = index.hnsw
    assert hnsw is not None
    exact = DenseVectors(vectors.shape[1])
    exact.add(np.arange(1, len(vectors) + 1, dtype=np.int64), vectors)
    print("\n| search | k=20 p50 / p95 ms | k=50 p50 / p95 ms | recall@50 |")
    print("|---|---|---|---|")
    for name, fn in (("exact numpy", exact.search), (f"hnsw ef={hnsw.ef_search}", hnsw.search)):
        k20 = timed(lambda q, f=fn: f(q, 20), queries)  # type: ignore[misc]
        k50 = timed(lambda q, f=fn: f(q, 50), queries)  # type: ignore[misc]
        rec = recall(fn, exact, queries, 50)
        print(f"| {name} | {k20[0]:.2f} / {k20[1]:.2f} | {k50[0]:.2f} / {k50[1]:.2f} | {rec:.3f} |")
    default_ef = hnsw.ef_search
    print("\n| ef_search | recall@50 | k=50 p50 ms |")
    print("|---|---|---|")
    for ef in EF_SWEEP:
        hnsw.set_ef(ef)
        rec = recall(hnsw.search, exact, queries, 50)
        p50 = timed(lambda q: hnsw.search(q, 50), queries[:100])[0]
        print(f"| {ef} | {rec:.3f} | {p50:.2f} |")
    hnsw.set_ef(default_ef)
    print("\n| filter (AdaptiveVectorIndex, k=20) | p50 / p95 ms | recall@20 |")
    print("|---|---|---|")
    for name, modulus in (("1 in 2 accepted", 2), ("1 in 10", 10), ("1 in 100", 100)):
        def accept(ls: np.ndarray, m: int = modulus) -> np.ndarray:
            return ls % m == 0

        p = timed(lambda q, a=accept: index.search(q, 20, a), queries)  # type: ignore[misc]
        rec = recall(index.search, exact, queries, 20, accept)
        print(f"| {name} | {p[0]:.2f} / {p[1]:.2f} | {rec:.3f} |")


def exact_by_size(vectors: np.ndarray, queries: np.ndarray) -> None:
    """Exact vs hnsw latency by live count: where ``exact_threshold`` should sit."""
    print("\n| live vectors | exact k=20 p50 / p95 ms | hnsw k=20 p50 / p95 ms |")
    print("|---|---|---|")
    config = VectorConfig()
    for n in EXACT_SIZES:
        if n > len(vectors):
            break
        labels = np.arange(n, dtype=np.int64)
        exact = DenseVectors(vectors.shape[1])
        exact.add(labels, vectors[:n])
        p = timed(lambda q, e=exact: e.search(q, 20), queries)  # type: ignore[misc]
        row = f"| {n:,} | {p[0]:.2f} / {p[1]:.2f} |"
        if n <= HNSW_SIZES_MAX:
            hnsw = build_hnsw(labels, vectors[:n], config, dim=vectors.shape[1])
            assert hnsw is not None
            h = timed(lambda q, x=hnsw: x.search(q, 20), queries)  # type: ignore[misc]
            row += f" {h[0]:.2f} / {h[1]:.2f} |"
        else:
            row += " (above) |"
        print(row)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--queries", type=int, default=300)
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    events = Events()
    logger = logging.getLogger("sidecar.retrieval.vector.adaptive")
    logger.addHandler(events)
    logger.setLevel(logging.INFO)
    docs, queries, texts = real_embeddings(args.queries)
    print(f"defaults: {VectorConfig()}; {os.cpu_count()} cores, load average "
          f"{' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    for n in sizes:
        bench_size(n, docs, texts, queries, events)
    exact_by_size(dataset(max(sizes), docs, texts)[0], queries)
    print(f"\nload average at the end: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    from bench.results import recorded

    with recorded("vector_index"):
        main()
