"""Semantic dedup kernels over L2-normalised float32 rows.

Dot products are computed with the second operand transposed (``(d, m)``), so the inner loop
runs over independent accumulators and vectorises without reassociating sums (fastmath off).
"""

from __future__ import annotations

import numpy as np

from kernels.flags import kernel


@kernel
def _dots(rows: np.ndarray, columns_t: np.ndarray) -> np.ndarray:
    n, d = rows.shape
    m = columns_t.shape[1]
    out = np.zeros((n, m), dtype=np.float32)
    for i in range(n):
        acc = out[i]
        for k in range(d):
            value = rows[i, k]
            for j in range(m):
                acc[j] += value * columns_t[k, j]
    return out


@kernel
def _buffer_max(candidates: np.ndarray, buffer_t: np.ndarray) -> np.ndarray:
    dots = _dots(candidates, buffer_t)
    n, m = dots.shape
    out = np.full(n, -np.inf, dtype=np.float32)
    for i in range(n):
        for j in range(m):
            if dots[i, j] > out[i]:
                out[i] = dots[i, j]
    return out


@kernel
def _greedy_unique(rows: np.ndarray, eligible: np.ndarray, threshold: float) -> np.ndarray:
    n = rows.shape[0]
    gram = _dots(rows, rows.T.copy())
    keep = np.zeros(n, dtype=np.bool_)
    kept = np.empty(n, dtype=np.int64)
    count = 0
    for i in range(n):
        if not eligible[i]:
            continue
        duplicate = False
        for c in range(count):
            if gram[i, kept[c]] > threshold:
                duplicate = True
                break
        if not duplicate:
            keep[i] = True
            kept[count] = i
            count += 1
    return keep


def _rows(x: np.ndarray, name: str) -> np.ndarray:
    if x.ndim != 2:
        raise ValueError(f"{name} must be a 2-D array of rows, got {x.ndim}-D")
    return np.ascontiguousarray(x, dtype=np.float32)


def buffer_max(candidates: np.ndarray, buffer: np.ndarray) -> np.ndarray:
    """For each candidate row, its highest cosine with any buffer row (-inf if the buffer is
    empty)."""
    candidates, buffer = _rows(candidates, "candidates"), _rows(buffer, "buffer")
    if candidates.shape[1] != buffer.shape[1] and buffer.shape[0] and candidates.shape[0]:
        raise ValueError(
            f"dimension mismatch: candidates {candidates.shape[1]}, buffer {buffer.shape[1]}"
        )
    if not buffer.shape[0] or not candidates.shape[0]:
        return np.full(candidates.shape[0], -np.inf, dtype=np.float32)
    return _buffer_max(candidates, np.ascontiguousarray(buffer.T))


def greedy_unique(rows: np.ndarray, eligible: np.ndarray, threshold: float) -> np.ndarray:
    """Walk ``rows`` in order; keep an eligible row unless its cosine with a row already kept
    is above ``threshold``. Returns the keep mask (ineligible rows are never kept).

    Rows must be L2-normalised float32; ``eligible`` a boolean vector of the same length.
    """
    rows = _rows(rows, "rows")
    if eligible.shape != (rows.shape[0],):
        raise ValueError(
            f"eligible must have shape ({rows.shape[0]},), got {eligible.shape}"
        )
    return _greedy_unique(rows, np.ascontiguousarray(eligible, dtype=np.bool_),
                          float(threshold))


def warm_up() -> object:
    """Compile the kernels of this module on a tiny input."""
    a = np.ones((2, 4), dtype=np.float32) / 2
    buffer_max(a, a)
    return greedy_unique(a, np.ones(2, dtype=np.bool_), 0.85)
