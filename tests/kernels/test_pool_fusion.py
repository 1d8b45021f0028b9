from __future__ import annotations

import numpy as np
import pytest

from kernels.pool_fusion import pool_fusion
from kernels.score_fusion import NORMALISATIONS
from tests import naive

DIM = 16


def case(seed: int, lists: int, n: int, vector_list: int, normalisation: str) -> None:
    rng = np.random.default_rng(seed)
    labels_max = 4 * n + 3
    matrix = rng.normal(size=(labels_max, DIM)).astype(np.float32)
    slot_of = rng.permutation(labels_max).astype(np.int64)
    slot_of[rng.random(labels_max) < 0.2] = -1  # labels without a row
    query = rng.normal(size=DIM).astype(np.float32)
    given = []
    for _ in range(lists):
        size = int(rng.integers(0, n + 1))
        found = rng.choice(labels_max, size=size, replace=False).tolist()
        given.append((found, sorted(rng.random(size).tolist(), reverse=True)))
    weights = rng.random(lists)
    importance, updated = rng.random(labels_max), rng.integers(0, 10**12, labels_max)
    now, half_life = 10**12, 86400.0 * 30
    pool, ranks, cosines, scores, order, slots = pool_fusion(
        np.array([x for f, _ in given for x in f], np.int64),
        np.array([x for _, s in given for x in s], np.float64),
        np.cumsum([0] + [len(f) for f, _ in given]).astype(np.int64), vector_list, slot_of,
        matrix, query, weights, NORMALISATIONS[normalisation], importance, updated, now,
        0.01, 0.02, half_life)
    ref_labels, ref_ranks, ref_values = naive.pool(given)
    assert pool.tolist() == ref_labels and ranks.tolist() == ref_ranks
    assert slots.tolist() == [slot_of[x] for x in ref_labels]
    ref_cos = [float(np.dot(matrix[slot_of[x]].astype(np.float64), query.astype(np.float64)))
               if slot_of[x] >= 0 else np.nan for x in ref_labels]
    np.testing.assert_allclose(cosines, ref_cos, rtol=0, atol=1e-12)
    values = np.array(ref_values, np.float64).reshape(len(ref_labels), lists)
    present = np.array(ref_ranks, np.int64).reshape(values.shape) > 0
    if vector_list >= 0:
        known = ~np.isnan(ref_cos)
        present[:, vector_list] = known
        values[:, vector_list] = np.where(known, ref_cos, 0.0)
    ref_scores, ref_order = naive.score_fusion(
        values, present, weights, normalisation, importance[ref_labels],
        (now - updated[ref_labels]) / 1e6, 0.01, 0.02, half_life, np.array(ref_labels))
    np.testing.assert_allclose(scores, ref_scores, rtol=0, atol=1e-9)
    assert order.tolist() == ref_order


@pytest.mark.parametrize("normalisation", sorted(NORMALISATIONS))
@pytest.mark.parametrize("seed,lists,n,vector_list", [
    (0, 1, 0, 0), (1, 3, 20, 0), (2, 3, 40, 1), (3, 2, 8, -1), (4, 1, 3, 0)])
def test_matches_naive(seed: int, lists: int, n: int, vector_list: int,
                       normalisation: str) -> None:
    case(seed, lists, n, vector_list, normalisation)


def test_labels_beyond_the_columns_are_rejected() -> None:
    with pytest.raises(ValueError, match="importance"):
        pool_fusion(np.array([5], np.int64), np.array([1.0]), np.array([0, 1], np.int64), 0,
                    np.full(8, -1, np.int64), np.zeros((1, 2), np.float32),
                    np.zeros(2, np.float32), np.ones(1), 0, np.ones(3), np.zeros(3, np.int64),
                    0, 0.0, 0.0, 1.0)


@pytest.mark.parametrize("weights,query,half_life,match", [
    (np.ones(2), np.zeros(2, np.float32), 1.0, "weights"),
    (np.ones(1), np.zeros(3, np.float32), 1.0, "width"),
    (np.ones(1), np.zeros(2, np.float32), 0.0, "half_life"),
])
def test_bad_arguments_are_rejected(weights: np.ndarray, query: np.ndarray, half_life: float,
                                    match: str) -> None:
    with pytest.raises(ValueError, match=match):
        pool_fusion(np.array([1], np.int64), np.array([1.0]), np.array([0, 1], np.int64), 0,
                    np.full(4, -1, np.int64), np.zeros((1, 2), np.float32), query, weights,
                    0, np.ones(4), np.zeros(4, np.int64), 0, 0.0, 0.0, half_life)
