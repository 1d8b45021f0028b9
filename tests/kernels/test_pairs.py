"""kernels.pairs.top_pairs against the all-pairs reference (tests/naive.py)."""

from __future__ import annotations

import os

import numpy as np
import pytest

from kernels.pairs import top_pairs
from tests import naive

# As plain Python (NUMBA_DISABLE_JIT=1) the same logic is checked on fewer, narrower rows.
NO_JIT = os.environ.get("NUMBA_DISABLE_JIT") == "1"
DIM = 16 if NO_JIT else 64
N = 60 if NO_JIT else 300


def exact_rows(n: int, rng: np.random.Generator) -> np.ndarray:
    """Unit rows whose cosines are exact in float32 (four entries of ±1/2 each): every
    product is a multiple of 1/4, so ties and floor edges are exact, whatever the order of
    the sums."""
    rows = np.zeros((n, 8), dtype=np.float32)
    for row in rows:
        row[rng.choice(8, size=4, replace=False)] = rng.choice([-0.5, 0.5], size=4)
    return rows


def clustered_rows(n: int, dim: int, rng: np.random.Generator) -> np.ndarray:
    centres = rng.standard_normal((max(1, n // 5), dim))
    rows = centres[rng.integers(0, len(centres), n)] + 0.25 * rng.standard_normal((n, dim))
    return (rows / np.linalg.norm(rows, axis=1, keepdims=True)).astype(np.float32)


def got(vectors: np.ndarray, floor: float, limit: int, block: int
        ) -> list[tuple[int, int, float]]:
    i, j, s = top_pairs(vectors, floor, limit, block=block)
    assert i.dtype == np.int64 and j.dtype == np.int64 and s.dtype == np.float32
    return list(zip(i.tolist(), j.tolist(), s.tolist(), strict=True))


@pytest.mark.parametrize("floor", [-1.0, 0.0, 0.25, 0.5, 0.75, 1.0])
@pytest.mark.parametrize("limit", [0, 1, 7, 50, 10_000])
@pytest.mark.parametrize("block", [1, 3, 16, 1024])
def test_exact_ties_and_floor_edges(floor: float, limit: int, block: int) -> None:
    rows = exact_rows(40, np.random.default_rng(int(floor * 8) + 8 + limit + block))
    expected = naive.top_pairs(rows, floor, limit)
    assert got(rows, floor, limit, block) == expected
    cosines = [c for _, _, c in naive.top_pairs(rows, -1.0, 10_000)]
    assert len(set(cosines)) < len(cosines)  # ties exist, and pairs sit on the floor exactly
    assert floor not in (0.25, 0.5) or floor in cosines


def test_limit_above_the_pairs_returns_every_pair() -> None:
    rows = exact_rows(12, np.random.default_rng(1))
    found = got(rows, -1.0, 1_000, 5)
    assert len(found) == 12 * 11 // 2 and found == naive.top_pairs(rows, -1.0, 1_000)


@pytest.mark.parametrize("n", [0, 1, 2, 3])
def test_tiny_inputs(n: int) -> None:
    rows = exact_rows(n, np.random.default_rng(n))
    assert got(rows, 0.0, 5, 2) == naive.top_pairs(rows, 0.0, 5)


@pytest.mark.parametrize("floor,limit", [(0.0, 1), (0.0, 100), (0.6, 1000), (0.9, 25)])
def test_random_rows_match_the_reference(floor: float, limit: int) -> None:
    rows = clustered_rows(N, DIM, np.random.default_rng(limit))
    found = got(rows, floor, limit, 64)
    expected = naive.top_pairs(rows, floor, limit)
    assert len(found) == len(expected) and found
    # BLAS may round the last bit differently from the float64 reference: compare pairs
    # away from rounding, and every cosine to 1e-6.
    assert [(i, j) for i, j, _ in found[:5]] == [(i, j) for i, j, _ in expected[:5]]
    for (i, j, c), (_, _, e) in zip(found, expected, strict=True):
        assert abs(c - e) < 1e-6 and abs(c - float(rows[i] @ rows[j])) < 1e-6
        assert c >= np.float32(floor)


def test_nan_rows_never_pair() -> None:
    rows = exact_rows(6, np.random.default_rng(2))
    rows[2] = np.nan
    found = got(rows, -1.0, 100, 4)
    assert found and all(2 not in (i, j) for i, j, _ in found)


def test_between_tiles_is_called_and_can_stop_the_scan() -> None:
    rows = exact_rows(10, np.random.default_rng(3))
    calls: list[int] = []
    top_pairs(rows, 0.0, 3, block=4, between_tiles=lambda: calls.append(1))
    assert len(calls) == 6  # 3 row blocks: 3 + 2 + 1 tiles of the upper triangle

    def stop() -> None:
        raise TimeoutError("gone")

    with pytest.raises(TimeoutError):
        top_pairs(rows, 0.0, 3, block=4, between_tiles=stop)


def test_bad_shapes_and_arguments() -> None:
    with pytest.raises(ValueError, match="2-D"):
        top_pairs(np.zeros(4, np.float32), 0.0, 1)
    with pytest.raises(ValueError, match="limit"):
        top_pairs(np.zeros((2, 4), np.float32), 0.0, -1)
    with pytest.raises(ValueError, match="block"):
        top_pairs(np.zeros((2, 4), np.float32), 0.0, 1, block=0)
