"""The exact vector index: a dense numpy matrix scanned with one matrix-vector product.

The adaptive index always keeps it: it gives the exact cosine of any memory (lexical and graph
hits need one) and is the reference the approximate index (hnswlib) is tested against.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from types import TracebackType

import numpy as np

from sidecar.retrieval.contract import Accept

_Picked = tuple[np.ndarray, np.ndarray, np.ndarray]  # (slots, scores, labels)
# Lock-free scoring attempts before a search scores under the lock (see DenseVectors.search).
_OPTIMISTIC_TRIES = 3


class DenseVectors:
    """Exact search over a growable dense matrix. Thread-safe; readers take a view of the matrix."""

    def __init__(self, dim: int, capacity: int = 1024) -> None:
        self.dim = dim
        self._lock = threading.Lock()
        self._matrix = np.zeros((capacity, dim), dtype=np.float32)
        self._labels = np.full(capacity, -1, dtype=np.int64)  # -1 = free slot
        self._slot_of = np.full(capacity, -1, dtype=np.int64)  # label -> slot, -1 = none
        self._count = 0  # live labels
        self._free: list[int] = []
        self._used = 0  # slots [0, _used) have been handed out
        # Optimistic reads: every write batch bumps _version and stamps the slots it wrote
        # (label or row) with it. A search scores views of the arrays without the lock, then
        # keeps its answer only if no returned slot was written after its view was taken.
        self._version = 0
        self._written = np.zeros(capacity, dtype=np.int64)

    def __len__(self) -> int:
        return self._count

    def add(self, labels: np.ndarray, vectors: np.ndarray) -> None:
        check_labels(labels)
        vectors = np.asarray(vectors, dtype=np.float32).reshape(len(labels), self.dim)
        with self._lock:
            self._version += 1
            slot_of = self._index_room(int(labels.max()) + 1 if len(labels) else 0)
            for label, vector in zip(labels.tolist(), vectors, strict=True):
                slot = int(slot_of[label])
                if slot < 0:
                    slot = slot_of[label] = self._take_slot()
                    self._labels[slot] = label
                    self._count += 1
                self._written[slot] = self._version
                self._matrix[slot] = vector

    def remove(self, labels: np.ndarray) -> None:
        with self._lock:
            self._version += 1
            for label in labels.tolist():
                slot = self._slot_at(label)
                if slot >= 0:
                    self._written[slot] = self._version
                    self._labels[slot] = -1
                    self._slot_of[label] = -1
                    self._count -= 1
                    self._free.append(slot)

    def search(
        self, query: np.ndarray, k: int, accept: Accept | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """Exact top-k; returned labels passed ``accept`` and their scores are the cosines of
        their rows (see ``_consistent``)."""
        def pick(scores: np.ndarray, labels: np.ndarray) -> _Picked:
            return _top_k(scores, labels, k, accept)

        return self._consistent(query, pick)

    def search_within(
        self, query: np.ndarray, k: int, labels: np.ndarray, accept: Accept | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """``search`` among the rows of ``labels`` only (any order; repeats and labels the
        index lacks ignored): the same answer, ties broken alike (slot order), when they hold
        every label ``accept`` takes, at the cost of their rows rather than of every row.
        Each row's cosine is its own dot product with the query (a product over more rows
        may round it differently in the last bit)."""
        labels = np.asarray(labels, dtype=np.int64)
        with self._lock:  # the rows copied under the lock: no write changes them meanwhile
            slot_of = self._slot_of
            slots = np.unique(slot_of[labels[(labels >= 0) & (labels < len(slot_of))]])
            slots = slots[slots >= 0]
            rows, found = self._matrix[slots], self._labels[slots]
        _, scores, picked = _top_k(rows @ np.asarray(query, dtype=np.float32), found, k, accept)
        return picked, scores

    def scan(self, query: np.ndarray, accept: Accept) -> tuple[np.ndarray, np.ndarray]:
        """Exact cosine of the query with every live accepted row: (labels, scores float32),
        in slot order."""
        def pick(scores: np.ndarray, labels: np.ndarray) -> _Picked:
            slots, found = _accepted(labels, accept)
            return slots, scores[slots].astype(np.float32), found

        return self._consistent(query, pick)

    def rows(self, accept: Accept) -> tuple[np.ndarray, np.ndarray]:
        """(labels ascending, a copy of their rows) of the live accepted rows."""
        with self._lock:
            slots, labels = _accepted(self._labels[: self._used].copy(), accept)
            order = np.argsort(labels, kind="stable")
            return labels[order], self._matrix[slots[order]]

    def _consistent(
        self, query: np.ndarray, pick: Callable[[np.ndarray, np.ndarray], _Picked]
    ) -> tuple[np.ndarray, np.ndarray]:
        """``pick``(scores of every slot, slot labels) -> (slots, scores, labels), computed
        on views of the arrays outside the lock. A writer may reuse a slot meanwhile, so the
        answer is kept only if none of its slots was written since the view was taken (else retried,
        finally scored under the lock)."""
        q = np.asarray(query, dtype=np.float32)
        for _ in range(_OPTIMISTIC_TRIES):
            with self._lock:
                version, used = self._version, self._used
                matrix, labels = self._matrix[:used], self._labels[:used]
            slots, scores, found = pick(matrix @ q, labels)
            with self._lock:
                if not np.any(self._written[slots] > version):
                    return found, scores
        with self._lock:  # writes keep hitting the answer: score a consistent view
            used = self._used
            labels = self._labels[:used].copy()
            all_scores = self._matrix[:used] @ q
        _, scores, found = pick(all_scores, labels)
        return found, scores

    def cosine(self, query: np.ndarray, labels: np.ndarray) -> np.ndarray:
        return self.rows_of(labels) @ np.asarray(query, dtype=np.float32)

    def rows_of(self, labels: np.ndarray) -> np.ndarray:
        """Copies of the rows of ``labels`` (n, dim); a row of nan for an unknown label."""
        labels = np.asarray(labels, dtype=np.int64)
        if not len(labels):
            return np.zeros((0, self.dim), dtype=np.float32)
        with self._lock:
            slot_of, matrix = self._slot_of, self._matrix
            inside = (labels >= 0) & (labels < len(slot_of))
            slots = np.where(inside, slot_of[np.where(inside, labels, 0)], -1)
            known = slots >= 0
            if known.all():
                rows: np.ndarray = matrix[slots]  # fancy indexing copies
                return rows
            out = np.full((len(labels), self.dim), np.nan, dtype=np.float32)
            out[known] = matrix[slots[known]]
        return out

    def locked_rows(self) -> _LockedRows:
        """Holds writes off; yields (label -> slot, -1 = none; the matrix, a row per slot)."""
        return _LockedRows(self)

    def _slot_at(self, label: int) -> int:
        """The slot of ``label``, -1 when it has none (under the lock)."""
        return int(self._slot_of[label]) if 0 <= label < len(self._slot_of) else -1

    def _index_slots(self, labels: np.ndarray, slots: np.ndarray) -> None:
        """Record label -> slot (under the lock)."""
        self._index_room(int(labels.max()) + 1 if len(labels) else 0)[labels] = slots

    def reserve_labels(self, labels: int) -> None:
        """The label -> slot index with room for labels below ``labels``."""
        with self._lock:
            self._index_room(labels)

    def _index_room(self, need: int) -> np.ndarray:
        """The label -> slot index with room for labels below ``need`` (under the lock); it
        grows as a new array, so a reader's reference stays valid."""
        if need > len(self._slot_of):
            grown = np.full(max(need, 2 * len(self._slot_of)), -1, dtype=np.int64)
            grown[: len(self._slot_of)] = self._slot_of
            self._slot_of = grown
        return self._slot_of

    def vector(self, label: int) -> np.ndarray | None:
        with self._lock:
            slot = self._slot_at(label)
            return None if slot < 0 else self._matrix[slot].copy()

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


class _LockedRows:
    """``DenseVectors.locked_rows``: a plain context manager (a search enters one each)."""

    __slots__ = ("_dense",)

    def __init__(self, dense: DenseVectors) -> None:
        self._dense = dense

    def __enter__(self) -> tuple[np.ndarray, np.ndarray]:
        dense = self._dense
        dense._lock.acquire()
        return dense._slot_of, dense._matrix

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None,
                 traceback: TracebackType | None) -> None:
        self._dense._lock.release()


def check_labels(labels: np.ndarray) -> None:
    if len(labels) and int(np.min(labels)) < 0:
        raise ValueError("vector labels must be >= 0")


def _accepted(labels: np.ndarray, accept: Accept | None) -> tuple[np.ndarray, np.ndarray]:
    """(slots, labels) of the live slots whose label ``accept`` takes.

    ``labels`` may be a view that writers change meanwhile (the caller then validates the
    slots): the live labels are copied once, ``accept`` sees that copy and the labels
    returned come from it. ``accept`` is only given live labels.
    """
    live = np.flatnonzero(labels >= 0)
    live_labels = labels[live]
    if accept is not None:
        keep = np.flatnonzero(np.asarray(accept(live_labels), dtype=bool))
        live, live_labels = live[keep], live_labels[keep]
    return live, live_labels


def _top_k(scores: np.ndarray, labels: np.ndarray, k: int, accept: Accept | None) -> _Picked:
    """(slots, scores float32, labels) of the k best accepted live slots, descending."""
    live, live_labels = _accepted(labels, accept)
    k = min(k, len(live))
    if k <= 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32), np.zeros(
            0, dtype=np.int64)
    cand_scores = scores[live]
    top = np.argpartition(-cand_scores, k - 1)[:k]
    top = top[np.argsort(-cand_scores[top], kind="stable")]
    return live[top], cand_scores[top].astype(np.float32), live_labels[top]
