"""Score fusion of a query's candidate pool in one pass: the pool of the sources' lists
(``kernels.pool``), the exact query cosine of every candidate read from the dense vector
matrix, then ``kernels.score_fusion`` over them.

Equal to building the pool, copying the candidates' rows, multiplying them by the query and
calling ``score_fusion.fuse_scores`` (the engine's reference path; cosines are accumulated
in float64 here, so they may differ from a float32 BLAS product in the last bits).
"""

from __future__ import annotations

import numpy as np

from kernels.flags import kernel, reassociating_kernel
from kernels.pool import _pool
from kernels.score_fusion import _fuse_scores

US_PER_S = 1_000_000.0


@reassociating_kernel
def _dot(row: np.ndarray, query: np.ndarray) -> float:
    """Dot product accumulated in float64 (vectorised: the sum is reassociated)."""
    acc = 0.0
    for d in range(row.shape[0]):
        acc += np.float64(row[d]) * np.float64(query[d])
    return acc


@kernel
def _cosines(slot_of: np.ndarray, matrix: np.ndarray, query: np.ndarray, labels: np.ndarray
             ) -> tuple[np.ndarray, np.ndarray]:
    """(cosine of each label's row, nan when it has none; its slot, -1 when none)."""
    n = labels.shape[0]
    cosines = np.full(n, np.nan, dtype=np.float64)
    slots = np.full(n, -1, dtype=np.int64)
    for i in range(n):
        label = labels[i]
        if label < 0 or label >= slot_of.shape[0] or slot_of[label] < 0:
            continue
        slot = slot_of[label]
        slots[i] = slot
        cosines[i] = _dot(matrix[slot], query)
    return cosines, slots


@kernel
def _pool_fusion(
    labels: np.ndarray, scores: np.ndarray, offsets: np.ndarray, vector_list: int,
    slot_of: np.ndarray, matrix: np.ndarray, query: np.ndarray, weights: np.ndarray,
    norm: int, importance: np.ndarray, updated_us: np.ndarray, now_us: int, alpha: float,
    beta: float, half_life_s: float,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    pool, ranks, values = _pool(labels, scores, offsets)
    n = pool.shape[0]
    cosines, slots = _cosines(slot_of, matrix, query, pool)
    present = ranks > 0
    if vector_list >= 0:
        for i in range(n):
            known = not np.isnan(cosines[i])
            present[i, vector_list] = known
            values[i, vector_list] = cosines[i] if known else 0.0
    boost_importance = np.empty(n, dtype=np.float64)
    age_s = np.empty(n, dtype=np.float64)
    for i in range(n):
        if pool[i] < 0 or pool[i] >= importance.shape[0] or pool[i] >= updated_us.shape[0]:
            raise ValueError("every label must index importance and updated_us")
        boost_importance[i] = importance[pool[i]]
        age_s[i] = (now_us - updated_us[pool[i]]) / US_PER_S
    fused, order = _fuse_scores(values, present, weights, norm, boost_importance, age_s,
                                alpha, beta, half_life_s, pool)
    return pool, ranks, cosines, fused, order, slots


def pool_fusion(
    labels: np.ndarray, scores: np.ndarray, offsets: np.ndarray, vector_list: int,
    slot_of: np.ndarray, matrix: np.ndarray, query: np.ndarray, weights: np.ndarray,
    normalisation: int, importance: np.ndarray, updated_us: np.ndarray, now_us: int,
    alpha: float, beta: float, half_life_s: float,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(pool labels ascending, ranks (n, lists) 1-based and 0 = absent, cosines (n,) nan
    without a row, fused scores (n,), order best first (score descending, then label
    ascending), each candidate's row in ``matrix`` (-1: none)).

    ``labels``/``scores``/``offsets``: the lists concatenated (``kernels.pool``);
    ``vector_list``: the list whose scores the cosines replace (-1: none); ``slot_of``
    (int64, label -> row of ``matrix``, -1 = none), ``matrix`` (float32, rows x dim) and
    ``query`` (float32, dim): the dense vectors; ``weights``: one per list;
    ``normalisation``: a value of ``score_fusion.NORMALISATIONS``; ``importance``
    (float64) and ``updated_us`` (int64): columns indexed by label; ``now_us``: the time
    ages are measured at. Every pool label must index ``importance`` and ``updated_us``.
    """
    if len(weights) != len(offsets) - 1:
        raise ValueError("weights must have one entry per list")
    if matrix.ndim != 2 or query.shape != (matrix.shape[1],):
        raise ValueError("query must have the matrix's width")
    if half_life_s <= 0:
        raise ValueError("half_life_s must be positive")
    return _pool_fusion(
        labels, scores, offsets, vector_list, slot_of, matrix,
        np.ascontiguousarray(query, dtype=np.float32), weights, normalisation, importance,
        updated_us, now_us, float(alpha), float(beta), float(half_life_s))


def warm_up() -> object:
    """Compile the kernel of this module on a tiny input."""
    matrix = np.eye(2, dtype=np.float32)
    return pool_fusion(
        np.array([1, 0, 1], np.int64), np.array([0.9, 2.0, 1.0]), np.array([0, 1, 3], np.int64),
        0, np.array([0, 1], np.int64), matrix, np.array([0.6, 0.8], np.float32),
        np.array([0.3, 0.7]), 0, np.ones(2), np.zeros(2, np.int64), 0, 0.005, 0.005, 1.0)
