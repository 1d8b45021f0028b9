"""The most similar pairs of a set of L2-normalised rows, in bounded memory.

The upper triangle of the Gram matrix is walked in tiles (``block`` rows by ``block`` columns,
a BLAS product each); a tile's cosines at or above the floor are offered to a heap of the best
``limit`` pairs seen so far, so memory stays O(block² + limit) whatever the number of rows.
"Best" orders by cosine (higher first), then by the first row, then by the second (lower
first), so ties resolve exactly as a sort of every pair by ``(-cosine, i, j)`` would.
Cosines and the floor are compared as float32.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from kernels.flags import kernel

BLOCK = 1024  # tile side: a 4 MB float32 tile, large enough for BLAS to run at full speed


@kernel
def _worse(s1: float, i1: int, j1: int, s2: float, i2: int, j2: int) -> bool:
    if s1 != s2:
        return s1 < s2
    if i1 != i2:
        return i1 > i2
    return j1 > j2


@kernel
def _swap(heap_s: np.ndarray, heap_i: np.ndarray, heap_j: np.ndarray, a: int, b: int) -> None:
    heap_s[a], heap_s[b] = heap_s[b], heap_s[a]
    heap_i[a], heap_i[b] = heap_i[b], heap_i[a]
    heap_j[a], heap_j[b] = heap_j[b], heap_j[a]


@kernel
def _sift_down(heap_s: np.ndarray, heap_i: np.ndarray, heap_j: np.ndarray, size: int) -> None:
    pos = 0
    while True:
        child = 2 * pos + 1
        if child >= size:
            return
        right = child + 1
        if right < size and _worse(heap_s[right], heap_i[right], heap_j[right],
                                   heap_s[child], heap_i[child], heap_j[child]):
            child = right
        if not _worse(heap_s[child], heap_i[child], heap_j[child],
                      heap_s[pos], heap_i[pos], heap_j[pos]):
            return
        _swap(heap_s, heap_i, heap_j, pos, child)
        pos = child


@kernel
def _sift_up(heap_s: np.ndarray, heap_i: np.ndarray, heap_j: np.ndarray, pos: int) -> None:
    while pos > 0:
        parent = (pos - 1) // 2
        if not _worse(heap_s[pos], heap_i[pos], heap_j[pos],
                      heap_s[parent], heap_i[parent], heap_j[parent]):
            return
        _swap(heap_s, heap_i, heap_j, pos, parent)
        pos = parent


@kernel
def _offer_tile(tile: np.ndarray, row0: int, col0: int, floor: np.float32,
                heap_s: np.ndarray, heap_i: np.ndarray, heap_j: np.ndarray, size: int) -> int:
    """Offer every pair (row0 + r, col0 + c) of ``tile`` with col0 + c > row0 + r and a
    cosine >= floor to the heap (worst pair at the root, capacity ``len(heap_s)``); returns
    the heap's new size."""
    capacity = heap_s.shape[0]
    rows, cols = tile.shape
    for r in range(rows):
        i = row0 + r
        first = max(0, i + 1 - col0)
        for c in range(first, cols):
            s = tile[r, c]
            if not s >= floor:  # also skips NaN
                continue
            j = col0 + c
            if size < capacity:
                heap_s[size], heap_i[size], heap_j[size] = s, i, j
                _sift_up(heap_s, heap_i, heap_j, size)
                size += 1
            elif _worse(heap_s[0], heap_i[0], heap_j[0], s, i, j):
                heap_s[0], heap_i[0], heap_j[0] = s, i, j
                _sift_down(heap_s, heap_i, heap_j, size)
    return size


def _nothing() -> None:
    return None


def top_pairs(
    vectors: np.ndarray, floor: float, limit: int, *,
    between_tiles: Callable[[], None] = _nothing, block: int = BLOCK,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The best ``limit`` pairs (i < j) with cosine >= ``floor``, as arrays ``(i, j, cosine)``
    (int64, int64, float32), most similar first (then by i, then by j).

    ``vectors``: (n, d) L2-normalised rows. ``between_tiles`` is called after every tile; an
    exception it raises (a passed deadline) stops the scan and propagates.
    """
    if vectors.ndim != 2:
        raise ValueError(f"vectors must be a 2-D array of rows, got {vectors.ndim}-D")
    if limit < 0 or block < 1:
        raise ValueError("limit must be >= 0 and block >= 1")
    rows = np.ascontiguousarray(vectors, dtype=np.float32)
    n = rows.shape[0]
    capacity = min(int(limit), n * (n - 1) // 2)
    heap_s = np.empty(capacity, dtype=np.float32)
    heap_i = np.empty(capacity, dtype=np.int64)
    heap_j = np.empty(capacity, dtype=np.int64)
    size = 0
    if capacity:
        bound = np.float32(floor)
        for row0 in range(0, n, block):
            left = rows[row0 : row0 + block]
            for col0 in range(row0, n, block):
                tile = left @ rows[col0 : col0 + block].T
                size = _offer_tile(tile, row0, col0, bound, heap_s, heap_i, heap_j, size)
                between_tiles()
    order = np.lexsort((heap_j[:size], heap_i[:size], -heap_s[:size]))
    return heap_i[order], heap_j[order], heap_s[order]


def warm_up() -> object:
    """Compile the kernel on a tiny input (two tiles, the heap full)."""
    a = np.eye(3, 4, dtype=np.float32)
    return top_pairs(a, 0.0, 2, block=2)
