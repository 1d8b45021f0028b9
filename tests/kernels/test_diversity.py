from __future__ import annotations

import numpy as np
import pytest

from kernels.diversity import spread
from tests import naive


def random_case(seed: int, n: int, groups: int, ties: bool) -> tuple[np.ndarray, ...]:
    rng = np.random.default_rng(seed)
    scores = rng.random(n)
    if ties:
        scores = np.round(scores * 4) / 4  # many equal scores: the order decides
    order = np.lexsort((rng.permutation(n), -scores)).astype(np.int64)
    return order, scores, rng.integers(0, groups + 1, n)


@pytest.mark.parametrize("penalty", [0.0, 0.05, 0.3, 2.0])
@pytest.mark.parametrize("seed,n,groups,ties,limit", [
    (0, 0, 3, False, 10), (1, 1, 1, False, 10), (2, 5, 1, True, 3), (3, 60, 8, False, 10),
    (4, 40, 3, True, 40), (5, 30, 30, False, 5), (6, 12, 2, True, 0)])
def test_matches_naive(seed: int, n: int, groups: int, ties: bool, limit: int,
                       penalty: float) -> None:
    order, scores, group = random_case(seed, n, groups, ties)
    got = spread(order, scores, group, penalty, limit)
    assert got.tolist() == naive.spread(order.tolist(), scores.tolist(), group.tolist(),
                                        penalty, limit)


def test_no_groups_or_no_penalty_keep_the_order() -> None:
    order, scores, groups = random_case(7, 20, 4, False)
    assert spread(order, scores, np.zeros(20, np.int64), 0.5, 10).tolist() == \
        order[:10].tolist()
    assert spread(order, scores, groups, 0.0, 10).tolist() == order[:10].tolist()


def test_a_second_hit_of_the_same_group_yields_to_another_group() -> None:
    scores = np.array([1.0, 0.95, 0.9, 0.5])
    groups = np.array([1, 1, 2, 0])
    assert spread(np.arange(4), scores, groups, 0.1, 4).tolist() == [0, 2, 1, 3]
    # Group 0 is never penalised: it keeps its place among its equals.
    assert spread(np.arange(4), scores, np.array([0, 0, 2, 0]), 0.1, 4).tolist() == [0, 1, 2, 3]


@pytest.mark.parametrize("penalty", [-0.1, float("nan")])
def test_bad_penalty_is_refused(penalty: float) -> None:
    with pytest.raises(ValueError, match="penalty"):
        spread(np.arange(2), np.ones(2), np.ones(2, np.int64), penalty, 2)
