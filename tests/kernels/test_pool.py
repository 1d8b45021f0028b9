from __future__ import annotations

import numpy as np
import pytest

from kernels.pool import pool_arrays
from tests import naive


def random_lists(seed: int, lists: int, n: int) -> list[tuple[list[int], list[float]]]:
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(lists):
        size = int(rng.integers(0, n + 1))
        labels = rng.choice(3 * n + 1, size=size, replace=False).tolist()
        out.append((labels, sorted(rng.random(size).tolist(), reverse=True)))
    return out


@pytest.mark.parametrize("seed,lists,n", [(0, 1, 0), (1, 1, 5), (2, 3, 20), (3, 3, 60),
                                          (4, 5, 8), (5, 2, 1)])
def test_matches_naive(seed: int, lists: int, n: int) -> None:
    given = random_lists(seed, lists, n)
    labels = np.array([x for found, _ in given for x in found], np.int64)
    scores = np.array([x for _, s in given for x in s], np.float64)
    offsets = np.cumsum([0] + [len(found) for found, _ in given])
    pool, ranks, values = pool_arrays(labels, scores, offsets)
    ref_labels, ref_ranks, ref_values = naive.pool(given)
    assert pool.tolist() == ref_labels
    assert ranks.tolist() == ref_ranks
    assert values.tolist() == ref_values
    assert ranks.dtype == np.int32 and ranks.shape == (len(ref_labels), lists)


def test_a_label_twice_in_one_list_keeps_its_later_entry() -> None:
    pool, ranks, values = pool_arrays(np.array([4, 2, 4]), np.array([3.0, 2.0, 1.0]),
                                      np.array([0, 3]))
    assert pool.tolist() == [2, 4]
    assert ranks.tolist() == [[2], [3]]
    assert values.tolist() == [[2.0], [1.0]]


@pytest.mark.parametrize("offsets", [[1, 2], [0, 1], [0, 2, 1, 2], []])
def test_bad_offsets_are_rejected(offsets: list[int]) -> None:
    with pytest.raises(ValueError, match="offsets"):
        pool_arrays(np.array([1, 2]), np.array([0.5, 0.4]), np.array(offsets, np.int64))


def test_scores_must_match_labels() -> None:
    with pytest.raises(ValueError, match="same length"):
        pool_arrays(np.array([1, 2]), np.array([0.5]), np.array([0, 2]))
