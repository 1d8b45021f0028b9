from __future__ import annotations

import numpy as np
import pytest

from kernels.bm25 import best_k, bm25_accumulate, bm25_top_k
from tests import naive


def csr(docs: list[list[int]], vocab: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    postings: list[list[tuple[int, int]]] = [[] for _ in range(vocab)]
    for d, terms in enumerate(docs):
        for t in sorted(set(terms)):
            postings[t].append((d, terms.count(t)))
    ptr = np.zeros(vocab + 1, np.int64)
    ptr[1:] = np.cumsum([len(p) for p in postings])
    flat = [x for p in postings for x in p]
    return (ptr, np.array([d for d, _ in flat], np.int32),
            np.array([tf for _, tf in flat], np.float32))


@pytest.mark.parametrize("seed", range(4))
def test_matches_direct_formula(seed: int) -> None:
    rng = np.random.default_rng(seed)
    vocab = 30
    docs = [rng.integers(0, vocab, size=rng.integers(1, 40)).tolist() for _ in range(60)]
    query = rng.integers(0, vocab + 5, size=5).tolist()  # some ids unknown to the segment
    words = [[f"t{t}" for t in d] for d in docs]
    ref = naive.bm25_scores(words, [f"t{t}" for t in query])
    # idf computed the reference way, passed per query occurrence
    df = np.array([sum(t in d for d in docs) for t in range(vocab + 5)], float)
    n = len(docs)
    raw = np.log(n - df + 0.5) - np.log(df + 0.5)
    mean = raw[df > 0].mean()
    idf = np.where(df > 0, np.where(raw < 0, 0.25 * mean, raw), 0.0)[query]
    doc_len = np.array([len(d) for d in docs], float)
    scores, seen, touched = np.zeros(n), np.zeros(n, np.uint8), np.empty(n, np.int64)
    count = bm25_accumulate(csr(docs, vocab), doc_len, np.ones(n, np.uint8),
                            np.array(query, np.int64), idf, 1.5, 0.75, doc_len.mean(),
                            scores, seen, touched, 0)
    np.testing.assert_allclose(scores, ref, atol=1e-9)
    assert sorted(touched[:count].tolist()) == [d for d in range(n) if set(docs[d]) & set(query)]


def test_dead_documents_are_skipped() -> None:
    docs = [[0, 1], [0], [1, 1]]
    alive = np.array([1, 0, 1], np.uint8)
    scores, seen, touched = np.zeros(3), np.zeros(3, np.uint8), np.empty(3, np.int64)
    count = bm25_accumulate(csr(docs, 2), np.array([2.0, 1.0, 2.0]), alive,
                            np.array([0], np.int64), np.array([1.0]), 1.5, 0.75, 1.5,
                            scores, seen, touched, 0)
    assert touched[:count].tolist() == [0] and scores[1] == 0.0


def test_argument_errors() -> None:
    seg = csr([[0]], 1)
    buf = (np.zeros(1), np.zeros(1, np.uint8), np.empty(1, np.int64))
    with pytest.raises(ValueError, match="same shape"):
        bm25_accumulate(seg, np.ones(1), np.ones(1, np.uint8), np.zeros(2, np.int64),
                        np.ones(1), 1.5, 0.75, 1.0, *buf, 0)
    with pytest.raises(ValueError, match="avgdl"):
        bm25_accumulate(seg, np.ones(1), np.ones(1, np.uint8), np.zeros(1, np.int64),
                        np.ones(1), 1.5, 0.75, 0.0, *buf, 0)


@pytest.mark.parametrize("seed,n,k", [(0, 0, 5), (1, 1, 1), (2, 50, 10), (3, 50, 0),
                                      (4, 30, 60), (5, 400, 20)])
def test_top_k_picks_like_a_sort_and_clears_the_buffers(seed: int, n: int, k: int) -> None:
    rng = np.random.default_rng(seed)
    size = 2 * n + 1
    scores, seen = np.zeros(size), np.zeros(size, np.uint8)
    touched = rng.permutation(size)[:n].astype(np.int64)
    scores[touched] = rng.choice([0.5, 1.0, 2.0, 3.5], n) if seed % 2 else rng.random(n)
    seen[touched] = 1
    doc_label = rng.permutation(10 * size).astype(np.int64)[:size]
    expected = sorted((-scores[d], doc_label[d]) for d in touched.tolist())[:k]
    full_touched = np.concatenate([touched, np.full(size - n, -1, np.int64)])
    labels, got = bm25_top_k(scores, seen, full_touched, n, doc_label, k)
    assert labels.tolist() == [label for _, label in expected]
    assert got.tolist() == [-s for s, _ in expected]
    assert not scores.any() and not seen.any()


def test_top_k_argument_errors() -> None:
    buffers = np.zeros(2), np.zeros(2, np.uint8), np.zeros(2, np.int64)
    with pytest.raises(ValueError, match="n_touched"):
        bm25_top_k(*buffers, 3, np.arange(2), 1)
    with pytest.raises(ValueError, match="k must"):
        bm25_top_k(*buffers, 0, np.arange(2), -1)


@pytest.mark.parametrize("seed", range(3))
def test_the_short_kernel_sums_as_the_other(seed: int) -> None:
    """``short`` (the GIL kept) is the same kernel compiled again: the same sums, bit for bit."""
    rng = np.random.default_rng(seed)
    vocab, n = 30, 80
    docs = [rng.integers(0, vocab, size=rng.integers(1, 40)).tolist() for _ in range(n)]
    segment = csr(docs, vocab)
    doc_len = np.array([len(d) for d in docs], float)
    alive = (rng.random(n) < 0.9).astype(np.uint8)
    query = rng.integers(-1, vocab + 3, size=7).astype(np.int64)
    idf = rng.normal(1.0, 0.5, size=7)
    got = []
    for short in (False, True):
        scores, seen, touched = np.zeros(n), np.zeros(n, np.uint8), np.empty(n, np.int64)
        count = bm25_accumulate(segment, doc_len, alive, query, idf, 1.5, 0.75,
                                doc_len.mean(), scores, seen, touched, 0, short=short)
        got.append((touched[:count].tolist(), scores.tolist()))
    assert got[0] == got[1]
    assert got[0][0]  # something was summed


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("k", [0, 1, 5, 20, 500])
def test_best_k_is_the_first_k_by_score_then_label(seed: int, k: int) -> None:
    """Against sorting every pair: ties of score (many, scores from a few values) by label."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(0, 300))
    labels = rng.permutation(10 * n + 1)[:n].astype(np.int64)
    scores = rng.choice([0.0, -0.0, 0.5, 1.25, 3.0, -2.0, 7.5], size=n) + (
        rng.random(n) if seed % 2 else 0.0)
    expected = sorted(zip(labels.tolist(), scores.tolist(), strict=True),
                      key=lambda pair: (-pair[1], pair[0]))[:k]
    got = best_k(labels, scores, k)
    assert got[0].dtype == np.int64 and got[1].dtype == np.float64
    assert list(zip(got[0].tolist(), got[1].tolist(), strict=True)) == expected


def test_best_k_rejects_what_it_cannot_rank() -> None:
    with pytest.raises(ValueError, match="same length"):
        best_k(np.arange(3), np.zeros(2), 1)
    with pytest.raises(ValueError, match="k must"):
        best_k(np.arange(2), np.zeros(2), -1)
