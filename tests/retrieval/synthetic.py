"""Synthetic unit vectors with a clustered distribution (a stand-in for real embeddings)."""

from __future__ import annotations

import numpy as np


def normalise(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, dtype=np.float32)
    out: np.ndarray = (x / np.linalg.norm(x, axis=-1, keepdims=True)).astype(np.float32)
    return out


def clustered(n: int, dim: int, seed: int, clusters: int = 50, spread: float = 0.6) -> np.ndarray:
    """n unit vectors around ``clusters`` random centres; ``spread`` = noise / centre norm."""
    rng = np.random.default_rng(seed)
    centres = normalise(rng.standard_normal((clusters, dim)))
    which = rng.integers(0, clusters, n)
    noise = rng.standard_normal((n, dim)).astype(np.float32) * (spread / np.sqrt(dim))
    return normalise(centres[which] + noise)


def exact_top(matrix: np.ndarray, labels: np.ndarray, query: np.ndarray, k: int) -> np.ndarray:
    """Labels of the k rows with the highest dot product with ``query``."""
    scores = matrix @ query
    return labels[np.argsort(-scores, kind="stable")[:k]]
