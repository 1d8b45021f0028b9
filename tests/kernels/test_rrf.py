from __future__ import annotations

import numpy as np
import pytest

from kernels.rrf import fuse
from tests import naive


def random_case(seed: int, n: int, ties: bool, sources: int = 3) -> tuple[np.ndarray, ...]:
    rng = np.random.default_rng(seed)
    ranks = rng.integers(0, 25, size=(n, sources))
    importance = rng.choice([0.3, 0.6, 0.8, 1.0], size=n) if ties else rng.random(n)
    age = rng.choice([0.0, 3600.0], size=n) if ties else rng.random(n) * 1e7 - 1e5
    if ties:  # duplicate rows -> identical scores, order decided by label
        ranks[n // 2:] = ranks[: n - n // 2]
        importance[n // 2:] = importance[: n - n // 2]
        age[n // 2:] = age[: n - n // 2]
    labels = rng.permutation(n * 3)[:n]
    return ranks, importance, age, labels


@pytest.mark.parametrize("sources", [1, 3, 5])
@pytest.mark.parametrize("seed,n,ties", [(0, 0, False), (1, 1, False), (2, 50, False),
                                         (3, 200, False), (4, 60, True), (5, 7, True)])
def test_matches_naive(seed: int, n: int, ties: bool, sources: int) -> None:
    ranks, importance, age, labels = random_case(seed, n, ties, sources)
    weights = np.array([1.0, 0.7, 0.4, 2.0, 0.1][:sources])
    args = (ranks, weights, 60.0, importance, age, 0.005, 0.005, 86400.0 * 30, labels)
    scores, order = fuse(*args)
    ref_scores, ref_order = naive.rrf(*args)
    np.testing.assert_allclose(scores, ref_scores, rtol=0, atol=1e-12)
    assert order.tolist() == ref_order


def test_all_ties_break_by_label() -> None:
    n = 10
    labels = np.array([9, 3, 7, 1, 5, 0, 8, 2, 6, 4])
    _, order = fuse(np.ones((n, 2)), np.ones(2), 60.0, np.ones(n), np.zeros(n), 0.0, 0.0,
                    1.0, labels)
    assert labels[order].tolist() == sorted(labels.tolist())


def test_absent_source_adds_nothing_and_boost_is_small() -> None:
    scores, _ = fuse(np.array([[1, 0, 0], [0, 0, 0]]), np.ones(3), 60.0, np.array([0.0, 1.0]),
                     np.array([0.0, 0.0]), 0.005, 0.0, 1.0, np.arange(2))
    assert scores[0] == pytest.approx(1 / 61)
    assert scores[1] == pytest.approx(0.005)


def test_shape_errors() -> None:
    with pytest.raises(ValueError, match="weights"):
        fuse(np.ones((2, 3)), np.ones(2), 60.0, np.ones(2), np.ones(2), 0, 0, 1, np.arange(2))
    with pytest.raises(ValueError, match="one entry per candidate"):
        fuse(np.ones((2, 3)), np.ones(3), 60.0, np.ones(3), np.ones(2), 0, 0, 1, np.arange(2))
    with pytest.raises(ValueError, match="positive"):
        fuse(np.ones((2, 3)), np.ones(3), 0.0, np.ones(2), np.ones(2), 0, 0, 1, np.arange(2))
