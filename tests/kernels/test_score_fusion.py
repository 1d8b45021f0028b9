from __future__ import annotations

import numpy as np
import pytest

from kernels.score_fusion import NORMALISATIONS, fuse_scores
from tests import naive


def random_case(seed: int, n: int, sources: int, ties: bool) -> tuple[np.ndarray, ...]:
    rng = np.random.default_rng(seed)
    values = rng.normal(size=(n, sources)) * rng.choice([0.3, 5.0], size=sources)
    present = rng.random((n, sources)) < 0.6
    if ties:  # duplicate rows -> identical scores, order decided by label
        values[n // 2:] = values[: n - n // 2]
        present[n // 2:] = present[: n - n // 2]
    values[~present] = np.nan  # never read
    importance = rng.choice([0.3, 0.8], size=n) if ties else rng.random(n)
    age = np.zeros(n) if ties else rng.random(n) * 1e7 - 1e5
    labels = rng.permutation(n * 3)[:n]
    return values, present, importance, age, labels


@pytest.mark.parametrize("normalisation", sorted(NORMALISATIONS))
@pytest.mark.parametrize("sources", [1, 3])
@pytest.mark.parametrize("seed,n,ties", [(0, 0, False), (1, 1, False), (2, 2, False),
                                         (3, 60, False), (4, 40, True), (5, 7, True)])
def test_matches_naive(seed: int, n: int, ties: bool, sources: int, normalisation: str) -> None:
    values, present, importance, age, labels = random_case(seed, n, sources, ties)
    weights = np.array([0.6, 0.4, 0.1][:sources])
    args = (values, present, weights, normalisation, importance, age, 0.005, 0.005,
            86400.0 * 30, labels)
    scores, order = fuse_scores(*args)
    ref_scores, ref_order = naive.score_fusion(*args)
    np.testing.assert_allclose(scores, ref_scores, rtol=0, atol=1e-9)
    assert order.tolist() == ref_order


def test_minmax_is_a_convex_combination_in_zero_one() -> None:
    values = np.array([[0.9, 12.0], [0.5, 3.0], [0.1, 0.0]])
    present = np.array([[True, True], [True, True], [True, False]])
    scores, order = fuse_scores(values, present, np.array([0.7, 0.3]), "minmax", np.zeros(3),
                                np.zeros(3), 0.0, 0.0, 1.0, np.arange(3))
    # Best of both sources -> 1; the worst BM25 score and an absent one both -> 0.
    assert scores.tolist() == pytest.approx([1.0, 0.7 * 0.5, 0.0])
    assert order.tolist() == [0, 1, 2]


def test_one_candidate_or_all_alike_scores_one() -> None:
    values = np.array([[3.0, 0.2], [0.0, 0.2]])
    present = np.array([[True, True], [False, True]])
    scores, _ = fuse_scores(values, present, np.array([1.0, 1.0]), "zscore", np.zeros(2),
                            np.zeros(2), 0.0, 0.0, 1.0, np.arange(2))
    assert scores.tolist() == [2.0, 1.0]


def test_zero_weight_source_is_ignored() -> None:
    values = np.array([[0.0, 1.0], [1.0, 0.0]])
    present = np.ones((2, 2), bool)
    _, order = fuse_scores(values, present, np.array([0.0, 1.0]), "minmax", np.zeros(2),
                           np.zeros(2), 0.0, 0.0, 1.0, np.arange(2))
    assert order.tolist() == [0, 1]


def test_bad_input() -> None:
    ok = (np.ones((2, 2)), np.ones((2, 2), bool), np.ones(2), "minmax", np.ones(2),
          np.ones(2), 0.0, 0.0, 1.0, np.arange(2))
    for at, bad, message in [(1, np.ones((2, 3), bool), "shape of values"),
                             (2, np.ones(3), "one entry per source"),
                             (3, "rank", "normalisation must be one of"),
                             (4, np.ones(3), "one entry per candidate"),
                             (8, 0.0, "positive"),
                             (0, np.array([[np.nan, 1.0], [1.0, 1.0]]), "finite")]:
        args = list(ok)
        args[at] = bad
        with pytest.raises(ValueError, match=message):
            fuse_scores(*args)  # type: ignore[arg-type]


def test_max_is_a_fraction_of_each_sources_best() -> None:
    values = np.array([[0.8, 10.0], [0.4, 5.0], [-0.2, 0.0]])
    present = np.array([[True, True], [True, True], [True, False]])
    scores, _ = fuse_scores(values, present, np.array([0.1, 0.9]), "max", np.zeros(3),
                            np.zeros(3), 0.0, 0.0, 1.0, np.arange(3))
    assert scores.tolist() == pytest.approx([1.0, 0.5, -0.025])
    none_positive = np.array([[-0.1, 1.0], [-0.3, 0.5]])
    scores, _ = fuse_scores(none_positive, np.ones((2, 2), bool), np.ones(2), "max",
                            np.zeros(2), np.zeros(2), 0.0, 0.0, 1.0, np.arange(2))
    assert scores.tolist() == [1.0, 0.5]
