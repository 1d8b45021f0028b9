"""In-process micro-benchmarks of the retrieval fast paths (``make bench``).

BM25 top-20 over 100,000 synthetic Zipf documents (the kernel + top-k), against rank-bm25 on
10,000 of them; the RRF and score fusion kernels and the channel spread on a 60-candidate union.
"""

from __future__ import annotations

import numpy as np
import pytest
from rank_bm25 import BM25Okapi

from kernels.diversity import spread
from kernels.rrf import fuse
from kernels.score_fusion import fuse_scores
from sidecar.retrieval.lexical.bm25 import BM25Index
from sidecar.retrieval.lexical.tokenize import query_terms, tokenize

VOCAB = [f"w{i}" for i in range(50_000)]


def zipf_docs(n: int, seed: int = 0) -> list[str]:
    rng = np.random.default_rng(seed)
    p = 1.0 / np.arange(1, len(VOCAB) + 1)
    p /= p.sum()
    words = rng.choice(len(VOCAB), size=n * 40, p=p)
    return [" ".join(VOCAB[w] for w in words[i * 40:(i + 1) * 40]) for i in range(n)]


QUERIES = ["w10 w250 w3000", "w5 w77 w12000 w40000", "w1 w2 w3", "w999 w31"]


@pytest.fixture(scope="module")
def index_100k() -> BM25Index:
    docs = zipf_docs(100_000)
    index = BM25Index(background_merge=False)
    for start in range(0, len(docs), 10_000):
        index.add(list(range(start + 1, start + 10_001)), docs[start:start + 10_000])
    index.merge()
    return index


def test_bm25_search_100k(benchmark, index_100k: BM25Index) -> None:  # type: ignore[no-untyped-def]
    state = {"i": 0}

    def one() -> object:
        state["i"] += 1
        return index_100k.search(QUERIES[state["i"] % len(QUERIES)], 20)

    benchmark(one)


def test_rank_bm25_reference_10k(benchmark) -> None:  # type: ignore[no-untyped-def]
    ref = BM25Okapi([tokenize(d) for d in zipf_docs(10_000)])
    benchmark(lambda: ref.get_scores(query_terms(QUERIES[0])))


def test_rrf_fuse_60(benchmark) -> None:  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(0)
    n = 60
    args = (rng.integers(0, 21, (n, 3)), np.ones(3), 60.0, rng.random(n), rng.random(n) * 1e6,
            0.005, 0.005, 2.6e6, np.arange(n))
    fuse(*args)
    benchmark(lambda: fuse(*args))


def test_score_fusion_60(benchmark) -> None:  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(0)
    n = 60
    present = rng.random((n, 3)) < 0.5
    present[:, 0] = True  # the cosine of every candidate
    args = (rng.random((n, 3)), present, np.array([0.3, 0.7, 0.1]), "max", rng.random(n),
            rng.random(n) * 1e6, 0.005, 0.005, 2.6e6, np.arange(n))
    fuse_scores(*args)
    benchmark(lambda: fuse_scores(*args))


def test_channel_spread_60(benchmark) -> None:  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(0)
    n = 60
    scores = np.sort(rng.random(n))[::-1].copy()
    args = (np.arange(n), scores, rng.integers(1, 9, n), 0.05 * scores[0], 10)
    spread(*args)
    benchmark(lambda: spread(*args))
