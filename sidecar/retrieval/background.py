"""The store's similarity background: how similar a query is to the stored memories at large.

For a query q and the live vectors v_1..v_n, the cosines q.v_i have mean q.m (m = the mean
vector) and variance q'Cq (C = the vectors' covariance). Both come from two running sums, the
vectors' sum and the sum of their outer products, kept as memories come and go, so the
background of a query costs one 384 x 384 product however large the store. The relevance
floor (``sidecar.injection.floor``) uses it to judge a hit against what the store returns for
any text: a store full of loosely related memories raises the background, and the floor with
it.
"""

from __future__ import annotations

import math
import threading

import numpy as np


class SimilarityBackground:
    def __init__(self, dim: int) -> None:
        self._lock = threading.Lock()
        self._n = 0
        self._sum = np.zeros(dim, np.float64)
        self._outer = np.zeros((dim, dim), np.float64)

    def __len__(self) -> int:
        return self._n

    def add(self, vectors: np.ndarray) -> None:
        """Count these vectors (rows) in."""
        self._update(vectors, 1)

    def remove(self, vectors: np.ndarray) -> None:
        """Count these vectors (rows), added before, out."""
        self._update(vectors, -1)

    def _update(self, vectors: np.ndarray, sign: int) -> None:
        if not len(vectors):
            return
        v = np.asarray(vectors, np.float32)  # float32 products, float64 sums
        total, outer = v.sum(axis=0, dtype=np.float64), (v.T @ v).astype(np.float64)
        with self._lock:
            self._n += sign * len(v)
            self._sum += sign * total
            self._outer += sign * outer

    def of(self, query: np.ndarray) -> tuple[float, float, int]:
        """(mean, standard deviation) of the query's cosine to the counted vectors, and their
        number; (0, 0, 0) with none counted."""
        q = np.asarray(query, np.float64)
        with self._lock:
            n, total, outer = self._n, self._sum @ q, q @ self._outer @ q
        if n <= 0:
            return 0.0, 0.0, 0
        mean = float(total) / n
        return mean, math.sqrt(max(float(outer) / n - mean * mean, 0.0)), n
