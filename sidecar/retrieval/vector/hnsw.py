"""Approximate vector search with hnswlib (the only module that imports it).

Inner-product space over L2-normalised float32 vectors, so ``1 - distance`` is the cosine.
Labels are memory ``seq`` values (int64). Behaviour of hnswlib 0.8.0 this adapter relies on
(checked by experiment, see tests/retrieval/test_vector_hnsw.py):

- ``add_items`` of a live label updates its vector in place.
- The index is created with ``allow_replace_deleted=True``: a *new* label added with
  ``replace_deleted=True`` reuses the slot of a deleted element, so forgetting does not
  grow the index forever. The price: a deleted label cannot be re-added directly (hnswlib
  raises), it must be ``unmark_deleted`` first -- unless its slot was already reused, in
  which case hnswlib no longer knows it and it is simply new again. And a *live* label must
  never be added with ``replace_deleted=True`` (that leaves a ghost copy of it behind).
- ``add_items`` beyond ``max_elements`` adds part of the batch and then raises: capacity is
  reserved (``resize_index``) before every add.
- ``knn_query`` raises when it cannot return ``k`` results (k above the live count, or live
  elements unreachable): k is clamped and the error handled.
- Reads (``knn_query``, ``save_index``) may run together and release the GIL; writes
  (add, update, delete, resize) must not overlap with them, hence the readers-writer lock.
"""

from __future__ import annotations

import logging
from pathlib import Path

import hnswlib
import numpy as np

from sidecar.retrieval.contract import Accept
from sidecar.retrieval.vector.rwlock import RWLock

log = logging.getLogger(__name__)

EMPTY = (np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32))
# First candidate list with a filter: max(2k, k + MIN_OVERSAMPLE); then x4 per round.
MIN_OVERSAMPLE = 32
GROWTH = 4


class HnswVectors:
    """An hnswlib index with upsert/remove semantics and filtered, clamped top-k search."""

    def __init__(
        self,
        dim: int,
        *,
        m: int = 16,
        ef_construction: int = 200,
        ef_search: int = 128,
        capacity: int = 1024,
        seed: int = 100,
    ) -> None:
        index = hnswlib.Index(space="ip", dim=dim)
        index.init_index(
            max_elements=max(capacity, 1), M=m, ef_construction=ef_construction,
            random_seed=seed, allow_replace_deleted=True,
        )
        self._setup(index, dim, ef_search, live=set())

    @classmethod
    def load(cls, path: Path, dim: int, live: np.ndarray, ef_search: int) -> HnswVectors:
        """Open a saved index whose live labels are ``live`` (the caller checked that)."""
        index = hnswlib.Index(space="ip", dim=dim)
        index.load_index(str(path), allow_replace_deleted=True)
        known = set(index.get_ids_list())
        live_set = set(np.asarray(live, dtype=np.int64).tolist())
        if not live_set <= known:
            raise ValueError(f"{len(live_set - known)} live labels are missing from {path}")
        self = cls.__new__(cls)
        self._setup(index, dim, ef_search, live=live_set)
        self._deleted = known - live_set
        return self

    def _setup(self, index: hnswlib.Index, dim: int, ef_search: int, live: set[int]) -> None:
        self.dim = dim
        self._index = index
        self._index.set_num_threads(1)
        self._index.set_ef(ef_search)
        self._lock = RWLock()
        self._live = live
        # Labels marked deleted; some may since have lost their slot to a new label.
        self._deleted: set[int] = set()

    def __len__(self) -> int:
        return len(self._live)

    @property
    def ef_search(self) -> int:
        return int(self._index.ef)

    def set_ef(self, ef: int) -> None:
        with self._lock.write():
            self._index.set_ef(ef)

    def element_count(self) -> int:
        """Slots in use, deleted ones included."""
        return int(self._index.element_count)

    # --- writes ----------------------------------------------------------------------------

    def add(self, labels: np.ndarray, vectors: np.ndarray, threads: int = 1) -> None:
        """Insert or replace (upsert) rows. Within one call the last row of a label wins."""
        labels, vectors = _last_wins(labels, vectors, self.dim)
        if len(labels) == 0:
            return
        with self._lock.write():
            self._revive([label for label in labels.tolist() if label in self._deleted])
            is_live = np.fromiter((label in self._live for label in labels.tolist()), bool,
                                  count=len(labels))
            self._reserve(int((~is_live).sum()))
            if is_live.any():
                self._index.add_items(vectors[is_live], labels[is_live], num_threads=threads)
            if (~is_live).any():
                self._index.add_items(vectors[~is_live], labels[~is_live], num_threads=threads,
                                      replace_deleted=True)
            self._live.update(labels.tolist())

    def remove(self, labels: np.ndarray) -> None:
        with self._lock.write():
            for label in np.asarray(labels, dtype=np.int64).tolist():
                if label in self._live:
                    self._index.mark_deleted(label)
                    self._live.discard(label)
                    self._deleted.add(label)
            vacant = self.element_count() - len(self._live)
            if len(self._deleted) > 2 * vacant + 1024:  # forget labels whose slot was reused
                self._deleted = set(self._index.get_ids_list()) - self._live

    def _revive(self, labels: list[int]) -> None:
        """Undelete labels that still own their slot, so the add below updates them."""
        for label in labels:
            self._deleted.discard(label)
            try:
                self._index.unmark_deleted(label)
            except RuntimeError:  # slot reused by another label: it is a new label again
                continue
            self._live.add(label)

    def _reserve(self, extra: int) -> None:
        need = self.element_count() + extra
        capacity = int(self._index.get_max_elements())
        if need > capacity:
            self._index.resize_index(max(need, 2 * capacity, 1024))

    # --- reads -----------------------------------------------------------------------------

    def search(
        self, query: np.ndarray, k: int, accept: Accept | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """Top-k accepted labels by cosine, descending (the VectorIndex protocol)."""
        found = self.query(query, k, accept)
        return found if found is not None else self._brute_force(query, k, accept)

    def query(
        self,
        query: np.ndarray,
        k: int,
        accept: Accept | None = None,
        *,
        first: int = 0,
        max_candidates: int | None = None,
        blocking: bool = True,
    ) -> tuple[np.ndarray, np.ndarray] | None:
        """Filtered top-k, or None when this index cannot answer well and exact search should.

        With a filter, asks hnswlib for ``first`` candidates (default max(2k, k+32)), drops the
        rejected ones and asks for GROWTH times more until k are accepted or the candidates
        reach ``max_candidates`` (default: every live element). None means: that budget ran
        out, hnswlib could not return enough results, or (``blocking=False``) a write is in
        progress.
        """
        if not self._lock.acquire_read(blocking):
            return None
        try:
            return self._query(_as_query(query, self.dim), k, accept, first, max_candidates)
        finally:
            self._lock.release_read()

    def _query(
        self, q: np.ndarray, k: int, accept: Accept | None, first: int, max_candidates: int | None
    ) -> tuple[np.ndarray, np.ndarray] | None:
        live = len(self._live)
        k = min(k, live)
        if k <= 0:
            return EMPTY
        limit = live if max_candidates is None else min(live, max(k, max_candidates))
        n = k if accept is None else min(limit, max(first, 2 * k, k + MIN_OVERSAMPLE))
        while True:
            try:
                found, distances = self._index.knn_query(q, k=n, num_threads=1)
            except RuntimeError:
                return None
            labels = found[0].astype(np.int64)
            scores = np.subtract(np.float32(1.0), distances[0], dtype=np.float32)
            if accept is not None:
                keep = np.asarray(accept(labels), dtype=bool)
                labels, scores = labels[keep], scores[keep]
            if len(labels) >= k or n >= limit:
                break
            n = min(limit, n * GROWTH)
        if len(labels) < k and limit < live:
            return None
        return labels[:k], scores[:k]

    def _brute_force(
        self, query: np.ndarray, k: int, accept: Accept | None
    ) -> tuple[np.ndarray, np.ndarray]:
        """Exact top-k over the vectors hnswlib holds (rare fallback for standalone use)."""
        with self._lock.read():
            labels = np.fromiter(self._live, dtype=np.int64, count=len(self._live))
            if accept is not None:
                labels = labels[np.asarray(accept(labels), dtype=bool)]
            if len(labels) == 0 or k <= 0:
                return EMPTY
            vectors = self._index.get_items(labels, return_type="numpy")
        scores = (vectors @ np.asarray(query, dtype=np.float32)).astype(np.float32)
        k = min(k, len(labels))
        top = np.argpartition(-scores, k - 1)[:k]
        top = top[np.argsort(-scores[top], kind="stable")]
        return labels[top], scores[top]

    def save(self, path: Path) -> None:
        """Write the index file (reads may continue; writes wait)."""
        with self._lock.read():
            self._index.save_index(str(path))


def _as_query(query: np.ndarray, dim: int) -> np.ndarray:
    return np.ascontiguousarray(query, dtype=np.float32).reshape(1, dim)


def _last_wins(labels: np.ndarray, vectors: np.ndarray, dim: int) -> tuple[np.ndarray, np.ndarray]:
    labels = np.asarray(labels, dtype=np.int64).ravel()
    vectors = np.ascontiguousarray(vectors, dtype=np.float32).reshape(len(labels), dim)
    if len(np.unique(labels)) == len(labels):
        return labels, vectors
    _, last_from_end = np.unique(labels[::-1], return_index=True)
    keep = np.sort(len(labels) - 1 - last_from_end)
    return labels[keep], np.ascontiguousarray(vectors[keep])
