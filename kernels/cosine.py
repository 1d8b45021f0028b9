"""Batched cosine kernels over L2-normalised float32 rows."""

from __future__ import annotations

import numpy as np

from kernels.flags import kernel
from kernels.warmup import register


@kernel
def _max_cosine(candidates: np.ndarray, buffer: np.ndarray) -> np.ndarray:
    n, d = candidates.shape
    m = buffer.shape[0]
    out = np.full(n, -np.inf, dtype=np.float32)
    for i in range(n):
        best = np.float32(-np.inf)
        for j in range(m):
            acc = np.float32(0.0)
            for k in range(d):
                acc += candidates[i, k] * buffer[j, k]
            if acc > best:
                best = acc
        out[i] = best
    return out


def max_cosine(candidates: np.ndarray, buffer: np.ndarray) -> np.ndarray:
    """For each candidate row, its highest dot product with any buffer row (-inf if none).

    Rows must be L2-normalised (dot product = cosine); both arrays float32, same width.
    """
    if candidates.ndim != 2 or buffer.ndim != 2:
        raise ValueError("max_cosine expects two 2-D arrays")
    if candidates.shape[1] != buffer.shape[1] and buffer.shape[0] and candidates.shape[0]:
        raise ValueError(
            f"dimension mismatch: candidates {candidates.shape[1]}, buffer {buffer.shape[1]}"
        )
    return _max_cosine(
        np.ascontiguousarray(candidates, dtype=np.float32),
        np.ascontiguousarray(buffer, dtype=np.float32),
    )


@register("cosine.max_cosine")
def _warm() -> object:
    a = np.ones((2, 4), dtype=np.float32) / 2
    return max_cosine(a, a)
