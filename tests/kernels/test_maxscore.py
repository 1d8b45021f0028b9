"""``kernels.maxscore`` against ``kernels.bm25`` (every posting scored, the reference of its
floats) and against the written-out formula (``tests.naive``)."""

from __future__ import annotations

import numpy as np
import pytest

from kernels.bm25 import bm25_accumulate, bm25_top_k
from kernels.maxscore import Visibility, _seek, _theta, maxscore_search
from tests import naive
from tests.kernels.test_bm25 import csr

K1, B = 1.5, 0.75
# visibility columns (alive, owner, code, kind, wanted, private, keys) offering every label
COLUMNS: Visibility = (np.ones(9, bool), np.zeros(9, np.int32), 0, np.zeros(9, np.int8),
           np.zeros(0, np.int8), np.zeros(9, np.int32), np.zeros(0, np.int32))


def zipf_docs(rng: np.random.Generator, n: int, vocab: int) -> list[list[int]]:
    docs = [(np.minimum(rng.zipf(1.4, int(rng.integers(1, 30))), vocab) - 1).tolist()
            for _ in range(n)]
    for i in range(0, n, 7):  # copies: ties
        docs[i] = list(docs[(i * 3) % n])
    return docs


def exhaustive(segment: tuple[np.ndarray, np.ndarray, np.ndarray], doc_len: np.ndarray,
               alive: np.ndarray, labels: np.ndarray, terms: np.ndarray, idf: np.ndarray,
               k: int) -> tuple[list[int], list[float]]:
    n = len(doc_len)
    scores, seen, touched = np.zeros(n), np.zeros(n, np.uint8), np.empty(n, np.int64)
    count = bm25_accumulate(segment, doc_len, alive, terms, idf, K1, B, doc_len.mean(), scores,
                            seen, touched, 0)
    best = bm25_top_k(scores, seen, touched, count, labels, k)
    return best[0].tolist(), best[1].tolist()


def pruned(segments: list[tuple[np.ndarray, np.ndarray, np.ndarray]], doc_len: np.ndarray,
           alive: np.ndarray, labels: np.ndarray, terms: np.ndarray, idf: np.ndarray,
           k: int, columns: Visibility | None = None) -> tuple[list[int], list[float]]:
    n = len(doc_len)
    buffers = (np.zeros(n), np.zeros(n, np.uint8), np.empty(n, np.int64), np.empty(n, np.int64))
    best = (np.empty(k, np.int64), np.empty(k), np.empty(k))
    norm = (K1, K1 * (1 - B), K1 * B / doc_len.mean())
    plan = (np.empty(len(terms)), np.empty(len(terms), np.int64), np.empty(len(terms) + 1))
    held = 0
    for segment in segments:
        bounds = np.zeros((len(segment[0]) - 1, 2)) if len(segments) == 1 else np.zeros((0, 2))
        held = maxscore_search(segment, bounds, (doc_len, alive, labels), terms, idf, norm, plan,
                               buffers, best, held, columns)
        assert held >= 0
    assert not buffers[0].any() and not buffers[1].any()  # left zero
    return best[0][:held].tolist(), best[1][:held].tolist()


@pytest.mark.parametrize("seed", range(6))
def test_top_k_equals_every_posting_scored(seed: int) -> None:
    """Labels, scores (the same floats) and order, over one segment and over the same
    documents cut in three segments, dead documents among them; k from 1 to past the
    matches; query terms repeated and unknown."""
    rng = np.random.default_rng(seed)
    vocab, n = 80, 300
    docs = zipf_docs(rng, n, vocab)
    doc_len = np.array([len(d) for d in docs], float)
    alive = (rng.random(n) > 0.1).astype(np.uint8)
    labels = rng.permutation(n).astype(np.int64) + 100
    whole = csr(docs, vocab)
    parts = []
    for lo, hi in ((0, 100), (100, 220), (220, n)):  # a segment holds [lo, hi) only
        part = csr([d if lo <= i < hi else [] for i, d in enumerate(docs)], vocab)
        parts.append(part)
    for _ in range(25):
        terms = rng.integers(-1, vocab + 3, int(rng.integers(1, 9))).astype(np.int64)
        idf = rng.uniform(0.05, 4.0, len(terms))
        idf[terms == -1] = 0.0
        for k in (1, 2, 5, 20, 400):
            want = exhaustive(whole, doc_len, alive, labels, terms, idf, k)
            assert pruned([whole], doc_len, alive, labels, terms, idf, k) == want
            assert pruned(parts, doc_len, alive, labels, terms, idf, k) == want


def offered(columns: Visibility, label: int) -> bool:
    """``LiveMemories.filter`` of one label, written out."""
    alive, owner, code, kind, wanted, private, keys = columns
    i = label if 0 < label < len(alive) else 0
    return bool(alive[i]) and owner[i] in (0, code) and (
        private[i] == 0 or private[i] in keys.tolist()) and (
        not len(wanted) or kind[i] in wanted.tolist())


@pytest.mark.parametrize("seed", range(4))
def test_top_k_with_visibility_columns_equals_the_filtered_scores(seed: int) -> None:
    """A document the columns do not offer never ranks nor counts toward the k-th best:
    the k best of the offered ones among every posting scored."""
    rng = np.random.default_rng(seed + 40)
    vocab, n = 60, 300
    docs = zipf_docs(rng, n, vocab)
    doc_len = np.array([len(d) for d in docs], float)
    alive = np.ones(n, np.uint8)
    labels = rng.permutation(n).astype(np.int64) + 1
    size = n + 1
    for wanted, keys in ((np.zeros(0, np.int8), np.zeros(0, np.int32)),
                         (np.array([1, 3], np.int8), np.array([7], np.int32))):
        columns = (rng.random(size) > 0.1, rng.choice([0, 0, 2, 5], size).astype(np.int32), 2,
                   rng.integers(0, 4, size).astype(np.int8), wanted,
                   rng.choice([0, 0, 7, 9], size).astype(np.int32), keys)
        keep = np.array([offered(columns, int(label)) for label in labels])
        for _ in range(15):
            terms = rng.integers(0, vocab, int(rng.integers(1, 7))).astype(np.int64)
            idf = rng.uniform(0.1, 3.0, len(terms))
            every = exhaustive(csr(docs, vocab), doc_len, alive, labels, terms, idf, n)
            scored = dict(zip(*every, strict=True))
            ranked = sorted((label for label in scored if keep[np.flatnonzero(labels == label)[0]]),
                            key=lambda label: (-scored[label], label))
            for k in (1, 3, 10, 40):
                got = pruned([csr(docs, vocab)], doc_len, alive, labels, terms, idf, k, columns)
                assert got == (ranked[:k], [scored[label] for label in ranked[:k]])


def test_scores_equal_the_written_out_formula() -> None:
    rng = np.random.default_rng(7)
    vocab = 40
    docs = zipf_docs(rng, 120, vocab)
    words = [[f"t{t}" for t in d] for d in docs]
    query = [0, 3, 3, 9, 17]
    ref = naive.bm25_scores(words, [f"t{t}" for t in query], K1, B)
    df = np.array([sum(t in d for d in docs) for t in range(vocab)], float)
    raw = np.log(len(docs) - df + 0.5) - np.log(df + 0.5)
    idf = np.where(raw < 0, 0.25 * raw[df > 0].mean(), raw)[query]
    assert (idf > 0).all()
    doc_len = np.array([len(d) for d in docs], float)
    labels = np.arange(len(docs), dtype=np.int64)
    got_labels, got_scores = pruned([csr(docs, vocab)], doc_len, np.ones(len(docs), np.uint8),
                                    labels, np.array(query, np.int64), idf, 10)
    order = sorted(range(len(docs)), key=lambda d: (-ref[d], d))[:10]
    assert got_labels == order
    np.testing.assert_allclose(got_scores, [ref[d] for d in order], rtol=0, atol=1e-9)


def test_a_term_at_idf_zero_or_below_is_not_pruned() -> None:
    docs = [[0, 1], [1], [0]]
    doc_len = np.array([2.0, 1.0, 1.0])
    n = 3
    buffers = (np.zeros(n), np.zeros(n, np.uint8), np.empty(n, np.int64), np.empty(n, np.int64))
    best = (np.empty(2, np.int64), np.empty(2), np.empty(2))
    for bad in (0.0, -0.3, np.nan):
        held = maxscore_search(csr(docs, 2), np.zeros((2, 2)),
                               (doc_len, np.ones(n, np.uint8), np.arange(n, dtype=np.int64)),
                               np.array([0, 1], np.int64), np.array([1.0, bad]),
                               (K1, K1 * (1 - B), K1 * B / doc_len.mean()),
                               (np.empty(2), np.empty(2, np.int64), np.empty(3)), buffers, best,
                               0)
        assert held == -1
        assert not buffers[0].any() and not buffers[1].any()


def test_seek_and_theta_against_numpy() -> None:
    rng = np.random.default_rng(3)
    post = np.unique(rng.integers(0, 300, 90)).astype(np.int32)
    for lo in (0, 7, len(post)):
        for d in range(-2, 303):
            assert _seek(post, lo, len(post), d) == lo + int(np.searchsorted(post[lo:], d))
    partial = rng.uniform(0, 10, 50)
    docs = rng.permutation(50).astype(np.int64)
    seed_scores = np.sort(rng.uniform(0, 10, 4))[::-1].copy()
    for k in (1, 3, 44, 45, 54, 55):
        seen = np.where(np.arange(50) % 5 == 0, 3, 1).astype(np.uint8)  # 3: rejected
        for columns in (None, COLUMNS):  # without a filter, the marks are not read
            theta = _theta(seed_scores, 4, partial, seen, docs, 50, np.empty(k), columns)
            kept = partial if columns is None else partial[seen != 3]
            values = np.sort(np.concatenate([seed_scores, kept]))[::-1]
            assert theta == (values[k - 1] if k <= len(values) else -np.inf)
