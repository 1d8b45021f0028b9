"""Weighted reciprocal rank fusion with an importance / recency tie-break boost.

For candidate i with 1-based rank r_s(i) in source s (0 = absent from that source):

    score(i) = sum_s w_s / (k + r_s(i))
               + alpha * importance(i) + beta * 0.5 ** (age(i) / half_life)

and candidates are ordered by score descending, then label ascending.
"""

from __future__ import annotations

import numpy as np

from kernels.flags import kernel


@kernel
def _fuse(
    ranks: np.ndarray, weights: np.ndarray, k: float, importance: np.ndarray,
    age_s: np.ndarray, alpha: float, beta: float, half_life_s: float, labels: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    n, sources = ranks.shape
    scores = np.zeros(n, dtype=np.float64)
    for i in range(n):
        acc = 0.0
        for s in range(sources):
            r = ranks[i, s]
            if r > 0:
                acc += weights[s] / (k + r)
        scores[i] = acc
    return scores, boost_and_order(scores, importance, age_s, alpha, beta, half_life_s, labels)


@kernel
def boost_and_order(
    scores: np.ndarray, importance: np.ndarray, age_s: np.ndarray, alpha: float, beta: float,
    half_life_s: float, labels: np.ndarray,
) -> np.ndarray:
    """Add the importance / recency boost to ``scores`` in place; the order, best first (score
    descending, then label ascending). Shared by every fusion kernel."""
    n = len(scores)
    for i in range(n):
        age = age_s[i] if age_s[i] > 0.0 else 0.0
        scores[i] += alpha * importance[i] + beta * 0.5 ** (age / half_life_s)
    by_label = np.argsort(labels, kind="mergesort")
    keys = np.empty(n, dtype=np.float64)
    for j in range(n):
        keys[j] = -scores[by_label[j]]
    return by_label[np.argsort(keys, kind="mergesort")]


def fuse(
    ranks: np.ndarray, weights: np.ndarray, k: float, importance: np.ndarray,
    age_s: np.ndarray, alpha: float, beta: float, half_life_s: float, labels: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """Fused scores of n candidates and their order (best first).

    ``ranks``: (n, sources) int, 1-based, 0 = absent; ``weights``: (sources,);
    ``importance``, ``age_s`` (seconds since last update), ``labels``: (n,).
    """
    ranks = np.ascontiguousarray(ranks, dtype=np.int32)
    if ranks.ndim != 2:
        raise ValueError("ranks must be a 2-D (candidates, sources) array")
    n, sources = ranks.shape
    weights = np.ascontiguousarray(weights, dtype=np.float64)
    if weights.shape != (sources,):
        raise ValueError(f"weights must have one entry per source ({sources})")
    if k <= 0:
        raise ValueError("k must be positive")
    importance, age_s, labels = candidate_arrays(n, importance, age_s, labels, half_life_s)
    scores, order = _fuse(ranks, weights, float(k), importance, age_s, float(alpha),
                          float(beta), float(half_life_s), labels)
    return scores, order


def candidate_arrays(
    n: int, importance: np.ndarray, age_s: np.ndarray, labels: np.ndarray, half_life_s: float,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The boost inputs of n candidates as contiguous float64 / int64 arrays, checked."""
    arrays = [np.ascontiguousarray(a, dtype=np.float64) for a in (importance, age_s)]
    labels = np.ascontiguousarray(labels, dtype=np.int64)
    if any(a.shape != (n,) for a in (*arrays, labels)):
        raise ValueError("importance, age_s and labels must have one entry per candidate")
    if half_life_s <= 0:
        raise ValueError("half_life_s must be positive")
    return arrays[0], arrays[1], labels


def warm_up() -> object:
    """Compile the kernels of this module on a tiny input."""
    return fuse(np.array([[1, 0], [2, 1]]), np.ones(2), 60.0, np.ones(2), np.zeros(2),
                0.005, 0.005, 86400.0, np.arange(2))
