"""Recall of the hnswlib path against exact search on real MiniLM embeddings.

Corpus: sentences from the Python standard library's docstrings (tests/retrieval/sentences.py),
2,000 indexed and 200 held out as queries, embedded once per module with the real ONNX model.
The floor is recall@50 >= 0.95 with the *default* settings (VectorConfig: hnsw_m=16,
hnsw_ef_construction=200, hnsw_ef_search=96); bench/bench_vector_index.py measures the same
at 10,000 and 100,000 vectors, where the default ef was chosen.
"""

from __future__ import annotations

import numpy as np
import pytest

from sidecar.embedding import Embedder
from sidecar.retrieval.vector.adaptive import AdaptiveVectorIndex, build_hnsw
from sidecar.retrieval.vector.config import VectorConfig
from sidecar.retrieval.vector.exact import DenseVectors
from tests.retrieval.sentences import docstring_sentences, stdlib_modules

DOCS, QUERIES, K = 2000, 200, 50


@pytest.fixture(scope="module")
def corpus(embedder: Embedder) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(labels, document vectors, query vectors)."""
    sentences = docstring_sentences(stdlib_modules())
    assert len(sentences) >= DOCS + QUERIES
    chosen = [sentences[i] for i in np.random.default_rng(0).permutation(len(sentences))]
    texts = sorted(chosen[: DOCS + QUERIES], key=len)  # similar lengths batch cheaply
    vectors = embedder.embed(texts)
    order = np.random.default_rng(1).permutation(len(texts))
    docs, queries = vectors[order[:DOCS]], vectors[order[DOCS:]]
    labels = np.arange(100, 100 + DOCS, dtype=np.int64) * 3  # sparse, like seqs after deletes
    return labels, docs, queries


def mean_recall(search: object, exact: DenseVectors, queries: np.ndarray, k: int,
                accept: object = None) -> float:
    hits = []
    for q in queries:
        got, _ = search(q, k, accept)  # type: ignore[operator]
        want, _ = exact.search(q, k, accept)  # type: ignore[arg-type]
        hits.append(len(set(got.tolist()) & set(want.tolist())) / len(want))
    return float(np.mean(hits))


def test_hnsw_recall_at_50_on_minilm_with_default_ef(corpus: tuple[np.ndarray, ...]) -> None:
    labels, docs, queries = corpus
    exact = DenseVectors(docs.shape[1])
    exact.add(labels, docs)
    hnsw = build_hnsw(labels, docs, VectorConfig(), dim=docs.shape[1])
    assert hnsw is not None and hnsw.ef_search == VectorConfig().hnsw_ef_search
    assert mean_recall(hnsw.search, exact, queries, K) >= 0.95


def test_filtered_recall_through_the_adaptive_index(corpus: tuple[np.ndarray, ...]) -> None:
    labels, docs, queries = corpus
    exact = DenseVectors(docs.shape[1])
    exact.add(labels, docs)
    index = AdaptiveVectorIndex(docs.shape[1], VectorConfig(exact_threshold=1, persist=False))
    index.add(labels, docs)
    index.start(wait=True)
    assert index.stats()["engine"] == "hnsw"

    def every_third(ls: np.ndarray) -> np.ndarray:
        return (ls // 3) % 3 == 0

    assert mean_recall(index.search, exact, queries, K) >= 0.95
    assert mean_recall(index.search, exact, queries, 20, every_third) >= 0.95
    index.close()
