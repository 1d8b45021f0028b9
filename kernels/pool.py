"""The candidate pool of one query: the distinct labels of several ranked lists, with each
label's 1-based rank and score in every list (0 = absent), in one pass.

The lists arrive concatenated: list j holds ``labels[offsets[j]:offsets[j + 1]]`` (best
first) and their ``scores``. The pool is sorted by label. A label listed twice in one list
keeps its later rank and score.
"""

from __future__ import annotations

import numpy as np

from kernels.flags import kernel


@kernel
def _pool(
    labels: np.ndarray, scores: np.ndarray, offsets: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    lists = offsets.shape[0] - 1
    total = labels.shape[0]
    if lists < 0 or offsets[0] != 0 or offsets[lists] != total:
        raise ValueError("offsets must rise from 0 to len(labels)")
    for j in range(lists):
        if offsets[j + 1] < offsets[j]:
            raise ValueError("offsets must rise from 0 to len(labels)")
    column = np.empty(total, dtype=np.int64)
    for j in range(lists):
        for p in range(offsets[j], offsets[j + 1]):
            column[p] = j
    order = np.argsort(labels, kind="mergesort")  # stable: a list's later entry comes last
    distinct = 0
    for i in range(total):
        if i == 0 or labels[order[i]] != labels[order[i - 1]]:
            distinct += 1
    pool = np.empty(distinct, dtype=np.int64)
    ranks = np.zeros((distinct, lists), dtype=np.int32)
    values = np.zeros((distinct, lists), dtype=np.float64)
    row = -1
    for i in range(total):
        p = order[i]
        if i == 0 or labels[p] != labels[order[i - 1]]:
            row += 1
            pool[row] = labels[p]
        j = column[p]
        ranks[row, j] = p - offsets[j] + 1
        values[row, j] = scores[p]
    return pool, ranks, values


def pool_arrays(
    labels: np.ndarray, scores: np.ndarray, offsets: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(pool labels ascending, ranks (n, lists) int32, scores (n, lists) float64).

    ``labels`` (int64) and ``scores`` (float64) are the lists concatenated; ``offsets``
    (int64, lists + 1, from 0 to len(labels), non-decreasing) where each list starts.
    """
    labels = np.ascontiguousarray(labels, dtype=np.int64)
    scores = np.ascontiguousarray(scores, dtype=np.float64)
    offsets = np.ascontiguousarray(offsets, dtype=np.int64)
    if scores.shape != labels.shape or labels.ndim != 1 or offsets.ndim != 1:
        raise ValueError("labels and scores must be 1-D arrays of the same length")
    if not len(offsets):
        raise ValueError("offsets must rise from 0 to len(labels)")
    pool, ranks, values = _pool(labels, scores, offsets)
    return pool, ranks, values


def warm_up() -> object:
    """Compile the kernel of this module on a tiny input."""
    return pool_arrays(np.array([3, 1, 1]), np.array([0.5, 0.2, 2.0]), np.array([0, 2, 3]))
