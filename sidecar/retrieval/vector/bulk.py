"""The exact dense matrix as the adaptive index uses it: bulk loads, row copies, samples."""

from __future__ import annotations

import numpy as np

from sidecar.retrieval.vector.exact import DenseVectors, check_labels


class BulkDenseVectors(DenseVectors):
    """DenseVectors plus a bulk path for new labels and copies of its live rows.

    Callers serialise writes (AdaptiveVectorIndex holds its write lock around them).
    """

    def add(self, labels: np.ndarray, vectors: np.ndarray) -> None:
        labels = np.asarray(labels, dtype=np.int64).ravel()
        check_labels(labels)
        vectors = np.asarray(vectors, dtype=np.float32).reshape(len(labels), self.dim)
        with self._lock:
            slot_of = self._slot_of
            fresh = not self._free and not (slot_of[labels[labels < len(slot_of)]] >= 0).any()
        if not fresh or len(np.unique(labels)) != len(labels):
            super().add(labels, vectors)
            return
        start, end = self._used, self._used + len(labels)
        matrix, slot_labels, written = self._matrix, self._labels, self._written
        if end > len(slot_labels):  # grow by doubling, outside the lock
            size = max(end, 2 * len(slot_labels))
            matrix = np.zeros((size, self.dim), dtype=np.float32)
            matrix[:start] = self._matrix[:start]
            slot_labels = np.full(size, -1, dtype=np.int64)
            slot_labels[:start] = self._labels[:start]
            written = np.zeros(size, dtype=np.int64)
            written[:start] = self._written[:start]
        # Slots [start, end) are beyond every reader's view until _used moves below.
        matrix[start:end] = vectors
        slot_labels[start:end] = labels
        with self._lock:
            self._version += 1
            written[start:end] = self._version
            self._matrix, self._labels, self._written = matrix, slot_labels, written
            self._index_slots(labels, np.arange(start, end))
            self._count += len(labels)
            self._used = end

    def reserve(self, capacity: int) -> None:
        """Room for ``capacity`` slots in one allocation (a bulk load then copies once)."""
        with self._lock:
            if capacity <= len(self._labels):
                return
            matrix = np.zeros((capacity, self.dim), dtype=np.float32)
            matrix[: self._used] = self._matrix[: self._used]
            labels = np.full(capacity, -1, dtype=np.int64)
            labels[: self._used] = self._labels[: self._used]
            written = np.zeros(capacity, dtype=np.int64)
            written[: self._used] = self._written[: self._used]
            self._matrix, self._labels, self._written = matrix, labels, written

    def copy_rows(self) -> tuple[np.ndarray, np.ndarray]:
        with self._lock:
            live = np.flatnonzero(self._labels[: self._used] >= 0)
            return self._labels[live].copy(), self._matrix[live].copy()

    def live_rows(self) -> tuple[np.ndarray, np.ndarray]:
        """Like ``copy_rows``, but views instead of copies when every used slot is live (after
        a bulk load); valid only while the caller keeps writers out."""
        with self._lock:
            if not self._free and self._count == self._used:
                return self._labels[: self._used], self._matrix[: self._used]
        return self.copy_rows()

    def sample_labels(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """About n live labels drawn at random (not strided: a stride aliases with filters)."""
        with self._lock:
            labels = self._labels[: self._used]
        if len(labels) == 0:
            return labels.copy()
        sample = labels[rng.integers(0, len(labels), n)]
        return sample[sample >= 0]
