"""Spreading a fused ranking over groups (channels): a greedy re-selection with a penalty.

Candidates come in fused order (``order``: positions, best first). Picking them one at a
time, a candidate's effective score is its fused score minus ``penalty`` for every candidate
already picked from its group; the best effective score is picked next, the earlier in
``order`` on ties. Group 0 means "no group" and is never penalised, so with every group 0 (or
a penalty of 0) the result is ``order`` itself. The fused scores are not changed.
"""

from __future__ import annotations

import numpy as np

from kernels.flags import kernel


@kernel
def _spread(order: np.ndarray, scores: np.ndarray, groups: np.ndarray, penalty: float,
            limit: int) -> np.ndarray:
    n = len(order)
    k = min(limit, n)
    out = np.empty(k, dtype=np.int64)
    taken = np.zeros(n, dtype=np.bool_)  # by position in ``order``
    above = np.zeros(n, dtype=np.int64)  # picked candidates of the same group, by position
    for step in range(k):
        best, best_value = -1, 0.0
        for pos in range(n):
            if taken[pos]:
                continue
            value = scores[order[pos]] - penalty * above[pos]
            if best < 0 or value > best_value:
                best, best_value = pos, value
        taken[best] = True
        out[step] = order[best]
        group = groups[order[best]]
        if group != 0:
            for pos in range(n):
                if groups[order[pos]] == group:
                    above[pos] += 1
    return out


def spread(order: np.ndarray, scores: np.ndarray, groups: np.ndarray, penalty: float,
           limit: int) -> np.ndarray:
    """The first ``limit`` positions of ``order`` re-selected as above (int64).

    ``order``: (n,) positions into ``scores`` and ``groups`` (both indexed by position), best
    first; ``groups``: int, 0 = none; ``penalty`` >= 0, in the unit of ``scores``.
    """
    order = np.ascontiguousarray(order, dtype=np.int64)
    if scores.shape != groups.shape or len(order) > len(scores):
        raise ValueError("scores and groups must have one entry per candidate")
    if penalty < 0 or not np.isfinite(penalty):
        raise ValueError("penalty must be finite and >= 0")
    limit = max(int(limit), 0)
    if penalty == 0.0 or not groups.any():
        return order[:limit]
    return _spread(order, np.ascontiguousarray(scores, dtype=np.float64),
                   np.ascontiguousarray(groups, dtype=np.int64), float(penalty), limit)


def warm_up() -> object:
    """Compile the kernel on a tiny input."""
    return spread(np.arange(3), np.array([1.0, 0.9, 0.8]), np.array([1, 1, 2]), 0.2, 2)
