from __future__ import annotations

import os

import numpy as np
import pytest

from kernels.dedup import buffer_max, greedy_unique

# As plain Python (NUMBA_DISABLE_JIT=1) the same logic is checked on narrower rows.
DIM = 24 if os.environ.get("NUMBA_DISABLE_JIT") == "1" else 384


def naive_greedy_unique(rows: np.ndarray, eligible: np.ndarray, threshold: float) -> np.ndarray:
    kept: list[int] = []
    for i, row in enumerate(rows):
        if eligible[i] and all(float(np.dot(row, rows[j])) <= threshold for j in kept):
            kept.append(i)
    keep = np.zeros(len(rows), dtype=bool)
    keep[kept] = True
    return keep


def near_duplicates(n: int, dim: int, rng: np.random.Generator) -> np.ndarray:
    """Rows in small clusters so that some pairs are above typical thresholds."""
    centres = rng.standard_normal((max(1, n // 3), dim)).astype(np.float32)
    rows = centres[rng.integers(0, len(centres), n)] + 0.4 * rng.standard_normal((n, dim))
    rows = rows.astype(np.float32)
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


@pytest.mark.parametrize("n", [0, 1, 2, 7, 25, 60])
@pytest.mark.parametrize("threshold", [0.5, 0.85, 0.95])
def test_matches_naive(n: int, threshold: float) -> None:
    rng = np.random.default_rng(n * 7 + int(threshold * 100))
    rows = near_duplicates(n, DIM, rng)
    eligible = rng.random(n) > 0.2
    got = greedy_unique(rows, eligible, threshold)
    np.testing.assert_array_equal(got, naive_greedy_unique(rows, eligible, threshold))


def naive_buffer_max(cands: np.ndarray, buf: np.ndarray) -> np.ndarray:
    return np.array([max((float(np.dot(r, b)) for b in buf), default=-np.inf) for r in cands],
                    dtype=np.float32)


@pytest.mark.parametrize("n,m", [(0, 3), (4, 0), (1, 1), (20, 250), (37, 5)])
def test_buffer_max_matches_naive(n: int, m: int) -> None:
    rng = np.random.default_rng(n * 31 + m)
    cands, buf = near_duplicates(n, DIM, rng), near_duplicates(m, DIM, rng)
    np.testing.assert_allclose(buffer_max(cands, buf), naive_buffer_max(cands, buf), atol=1e-5)


def test_buffer_max_shape_errors() -> None:
    with pytest.raises(ValueError):
        buffer_max(np.zeros((2, 4), np.float32), np.zeros((2, 5), np.float32))
    with pytest.raises(ValueError):
        buffer_max(np.zeros(4, np.float32), np.zeros((2, 4), np.float32))


def test_some_dropped_some_kept() -> None:
    rng = np.random.default_rng(3)
    rows = near_duplicates(30, 64, rng)
    keep = greedy_unique(rows, np.ones(30, dtype=bool), 0.85)
    assert 0 < keep.sum() < 30
    kept = rows[keep]
    sims = kept @ kept.T
    np.fill_diagonal(sims, -1)
    assert sims.max() <= 0.85 + 1e-6


def test_ineligible_never_kept_and_never_blocks() -> None:
    row = np.ones((1, 4), dtype=np.float32) / 2
    rows = np.vstack([row, row])
    np.testing.assert_array_equal(greedy_unique(rows, np.array([False, True]), 0.5),
                                  [False, True])


def test_shape_errors() -> None:
    with pytest.raises(ValueError):
        greedy_unique(np.zeros(4, np.float32), np.ones(4, bool), 0.5)
    with pytest.raises(ValueError):
        greedy_unique(np.zeros((3, 4), np.float32), np.ones(2, bool), 0.5)
