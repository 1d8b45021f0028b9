from __future__ import annotations

import numpy as np
import pytest

from kernels.cosine import max_cosine


def naive_max_cosine(cands: np.ndarray, buf: np.ndarray) -> np.ndarray:
    out = []
    for row in cands:
        out.append(max((float(np.dot(row, b)) for b in buf), default=-np.inf))
    return np.array(out, dtype=np.float32)


def unit(rows: int, dim: int, rng: np.random.Generator) -> np.ndarray:
    x = rng.standard_normal((rows, dim)).astype(np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


@pytest.mark.parametrize("n,m", [(0, 3), (5, 0), (1, 1), (25, 40), (100, 7)])
def test_matches_naive(n: int, m: int) -> None:
    rng = np.random.default_rng(n * 100 + m)
    cands, buf = unit(n, 384, rng), unit(m, 384, rng)
    np.testing.assert_allclose(max_cosine(cands, buf), naive_max_cosine(cands, buf), atol=1e-5)


def test_identical_rows_score_one() -> None:
    rng = np.random.default_rng(1)
    x = unit(4, 16, rng)
    np.testing.assert_allclose(max_cosine(x, x), 1.0, atol=1e-6)


def test_shape_errors() -> None:
    with pytest.raises(ValueError):
        max_cosine(np.zeros((2, 4), np.float32), np.zeros((2, 5), np.float32))
    with pytest.raises(ValueError):
        max_cosine(np.zeros(4, np.float32), np.zeros((2, 4), np.float32))
