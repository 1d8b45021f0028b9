"""The store's similarity background: how similar a query is to the stored memories at large.

The mean and standard deviation of a query's cosine to the live vectors, measured on a
uniform sample of at most ``size`` of them (all of them in a smaller store). The sample is
drawn on first use and drawn again once the store has changed by a tenth of its size, so a
query costs one ``size`` x dim product and a write only a counter. The relevance floor
(``sidecar.injection.floor``) uses it to judge a hit against what the store returns for any
text: a store full of loosely related memories raises the background, and the floor with it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

import numpy as np

SAMPLE = 1024  # vectors the background is measured on

# Draws a uniform sample of at most n live vectors: (rows (m, dim), number of live vectors).
Draw = Callable[[int], tuple[np.ndarray, int]]


class SimilarityBackground:
    def __init__(self, draw: Draw, size: int = SAMPLE) -> None:
        self._draw, self._size = draw, size
        self._lock = threading.Lock()
        self._sample: np.ndarray | None = None
        self._count = 0  # live vectors when the sample was drawn
        self._changes = 0  # vectors added or removed since

    def changed(self, n: int) -> None:
        """``n`` vectors were added, replaced or removed."""
        with self._lock:
            self._changes += n

    def of(self, query: np.ndarray) -> tuple[float, float, int]:
        """(mean, standard deviation) of the query's cosine to the live vectors, and their
        number; (0, 0, 0) for an empty store."""
        sample, count = self._current()
        if not len(sample):
            return 0.0, 0.0, 0
        cosines = sample @ np.asarray(query, np.float32)
        return float(cosines.mean()), float(cosines.std()), count

    def _current(self) -> tuple[np.ndarray, int]:
        with self._lock:
            if self._sample is None or self._changes > self._count // 10:
                self._sample, self._count = self._draw(self._size)
                self._changes = 0
            return self._sample, self._count


def uniform(labels: np.ndarray, n: int, seed: int = 0) -> np.ndarray:
    """At most ``n`` of ``labels``, chosen uniformly (all of them when there are fewer)."""
    if len(labels) <= n:
        return labels
    return np.random.default_rng(seed).choice(labels, n, replace=False)
