from __future__ import annotations

import numpy as np

from sidecar.retrieval.vectors import DenseVectors


def unit(n: int, d: int, seed: int) -> np.ndarray:
    x = np.random.default_rng(seed).standard_normal((n, d)).astype(np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def test_dense_matches_brute_force_with_filter_and_updates() -> None:
    vecs = unit(3000, 32, 0)
    index = DenseVectors(dim=32, capacity=16)
    labels = np.arange(10, 3010, dtype=np.int64)
    index.add(labels, vecs)
    index.remove(labels[:100])
    index.add(labels[100:110], unit(10, 32, 1))  # replace in place
    vecs[100:110] = unit(10, 32, 1)
    q = unit(1, 32, 2)[0]
    got_labels, got_scores = index.search(q, 20, accept=lambda ls: ls % 2 == 0)
    live = np.arange(100, 3000)
    live = live[labels[live] % 2 == 0]
    scores = vecs[live] @ q
    order = np.argsort(-scores)[:20]
    assert got_labels.tolist() == labels[live[order]].tolist()
    np.testing.assert_allclose(got_scores, scores[order], rtol=1e-5)
    assert len(index) == 2900
    cos = index.cosine(q, np.array([labels[0], labels[200]]))
    assert np.isnan(cos[0]) and np.isclose(cos[1], vecs[200] @ q, atol=1e-5)
    assert index.vector(int(labels[0])) is None


def test_k_larger_than_live_count_is_clamped() -> None:
    index = DenseVectors(dim=8)
    index.add(np.array([1, 2], dtype=np.int64), unit(2, 8, 3))
    got, _ = index.search(unit(1, 8, 4)[0], 50)
    assert sorted(got.tolist()) == [1, 2]
    empty = DenseVectors(dim=8)
    assert len(empty.search(unit(1, 8, 4)[0], 5)[0]) == 0
