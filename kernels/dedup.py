"""Greedy within-batch semantic dedup over L2-normalised float32 rows."""

from __future__ import annotations

import numpy as np

from kernels.flags import kernel
from kernels.warmup import register


@kernel
def _greedy_unique(rows: np.ndarray, eligible: np.ndarray, threshold: float) -> np.ndarray:
    n, d = rows.shape
    keep = np.zeros(n, dtype=np.bool_)
    kept = np.empty(n, dtype=np.int64)
    count = 0
    for i in range(n):
        if not eligible[i]:
            continue
        duplicate = False
        for c in range(count):
            j = kept[c]
            acc = np.float32(0.0)
            for k in range(d):
                acc += rows[i, k] * rows[j, k]
            if acc > threshold:
                duplicate = True
                break
        if not duplicate:
            keep[i] = True
            kept[count] = i
            count += 1
    return keep


def greedy_unique(rows: np.ndarray, eligible: np.ndarray, threshold: float) -> np.ndarray:
    """Walk ``rows`` in order; keep an eligible row unless its cosine with a row already kept
    is above ``threshold``. Returns the keep mask (ineligible rows are never kept).

    Rows must be L2-normalised float32; ``eligible`` a boolean vector of the same length.
    """
    if rows.ndim != 2:
        raise ValueError("greedy_unique expects a 2-D array of rows")
    if eligible.shape != (rows.shape[0],):
        raise ValueError(
            f"eligible must have shape ({rows.shape[0]},), got {eligible.shape}"
        )
    return _greedy_unique(
        np.ascontiguousarray(rows, dtype=np.float32),
        np.ascontiguousarray(eligible, dtype=np.bool_),
        float(threshold),
    )


@register("dedup.greedy_unique")
def _warm() -> object:
    a = np.ones((2, 4), dtype=np.float32) / 2
    return greedy_unique(a, np.ones(2, dtype=np.bool_), 0.85)
