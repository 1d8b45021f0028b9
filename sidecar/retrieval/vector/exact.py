"""The exact vector index: a dense numpy matrix scanned with one matrix-vector product.

The adaptive index always keeps it: it gives the exact cosine of any memory (lexical and graph
hits need one) and is the reference the approximate index (hnswlib) is tested against.
"""

from __future__ import annotations

import threading

import numpy as np

from sidecar.retrieval.contract import Accept

# Lock-free scoring attempts before a search scores under the lock (see DenseVectors.search).
_OPTIMISTIC_TRIES = 3


class DenseVectors:
    """Exact search over a growable dense matrix. Thread-safe; readers take a snapshot."""

    def __init__(self, dim: int = 384, capacity: int = 1024) -> None:
        self.dim = dim
        self._lock = threading.Lock()
        self._matrix = np.zeros((capacity, dim), dtype=np.float32)
        self._labels = np.full(capacity, -1, dtype=np.int64)  # -1 = free slot
        self._slot: dict[int, int] = {}
        self._free: list[int] = []
        self._used = 0  # slots [0, _used) have been handed out
        # Optimistic reads: every write batch bumps _version and stamps the slots it wrote
        # (label or row) with it. A search scores views of the arrays without the lock, then
        # keeps its answer only if no returned slot was written after its snapshot.
        self._version = 0
        self._written = np.zeros(capacity, dtype=np.int64)

    def __len__(self) -> int:
        return len(self._slot)

    def add(self, labels: np.ndarray, vectors: np.ndarray) -> None:
        vectors = np.asarray(vectors, dtype=np.float32).reshape(len(labels), self.dim)
        with self._lock:
            self._version += 1
            for label, vector in zip(labels.tolist(), vectors, strict=True):
                slot = self._slot.get(label)
                if slot is None:
                    slot = self._take_slot()
                    self._slot[label] = slot
                    self._labels[slot] = label
                self._written[slot] = self._version
                self._matrix[slot] = vector

    def remove(self, labels: np.ndarray) -> None:
        with self._lock:
            self._version += 1
            for label in labels.tolist():
                slot = self._slot.pop(label, None)
                if slot is not None:
                    self._written[slot] = self._version
                    self._labels[slot] = -1
                    self._free.append(slot)

    def search(
        self, query: np.ndarray, k: int, accept: Accept | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """Exact top-k. Scores views of the arrays outside the lock; a writer may reuse a
        slot meanwhile, so the answer is kept only if none of its slots was written since
        the snapshot (else retried, finally scored under the lock). Returned labels passed
        ``accept`` and their scores are the cosines of their rows."""
        q = np.asarray(query, dtype=np.float32)
        for _ in range(_OPTIMISTIC_TRIES):
            with self._lock:
                version, used = self._version, self._used
                matrix, labels = self._matrix[:used], self._labels[:used]
            slots, scores, found = _top_k(matrix @ q, labels, k, accept)
            with self._lock:
                if not np.any(self._written[slots] > version):
                    return found, scores
        with self._lock:  # writes keep hitting the answer: score a consistent snapshot
            used = self._used
            labels = self._labels[:used].copy()
            all_scores = self._matrix[:used] @ q
        _, scores, found = _top_k(all_scores, labels, k, accept)
        return found, scores

    def cosine(self, query: np.ndarray, labels: np.ndarray) -> np.ndarray:
        out = np.full(len(labels), np.nan, dtype=np.float32)
        with self._lock:
            slots = [self._slot.get(label, -1) for label in labels.tolist()]
            found = [i for i, s in enumerate(slots) if s >= 0]
            rows = self._matrix[[slots[i] for i in found]]
        if found:
            out[found] = rows @ np.asarray(query, dtype=np.float32)
        return out

    def vector(self, label: int) -> np.ndarray | None:
        with self._lock:
            slot = self._slot.get(label)
            return None if slot is None else self._matrix[slot].copy()

    def _take_slot(self) -> int:
        if self._free:
            return self._free.pop()
        if self._used == len(self._labels):
            grow = max(1024, len(self._labels))
            self._matrix = np.vstack([self._matrix, np.zeros((grow, self.dim), np.float32)])
            self._labels = np.concatenate([self._labels, np.full(grow, -1, np.int64)])
            self._written = np.concatenate([self._written, np.zeros(grow, np.int64)])
        self._used += 1
        return self._used - 1


def _top_k(
    scores: np.ndarray, labels: np.ndarray, k: int, accept: Accept | None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(slots, scores float32, labels) of the k best accepted live slots, descending.

    ``labels`` may be a view that writers change meanwhile (the caller then validates the
    slots): the live labels are copied once, ``accept`` sees that copy and the labels
    returned come from it. ``accept`` is only given live labels.
    """
    live = np.flatnonzero(labels >= 0)
    live_labels = labels[live]
    if accept is not None:
        keep = np.flatnonzero(np.asarray(accept(live_labels), dtype=bool))
        live, live_labels = live[keep], live_labels[keep]
    k = min(k, len(live))
    if k <= 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32), np.zeros(
            0, dtype=np.int64)
    cand_scores = scores[live]
    top = np.argpartition(-cand_scores, k - 1)[:k]
    top = top[np.argsort(-cand_scores[top], kind="stable")]
    return live[top], cand_scores[top].astype(np.float32), live_labels[top]
