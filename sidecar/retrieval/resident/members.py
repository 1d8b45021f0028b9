"""Which held memories belong to which scope, and the bytes each scope takes in the indexes.

The bytes of a memory are an estimate of what the indexes hold for it: its vector in the
dense matrix (4 x dim), its record and text in the mirror, its BM25 postings and its mirror
columns, its graph edges and its scope's term counts; ``ROW_BYTES`` and ``TEXT_FACTOR`` were
measured (bench/resident_bytes.py without edges, the process's growth over 50,000 memories of
a fleet store with 1.3 edges each; docs/decisions/0022-resident-scopes.md).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

import numpy as np

from sidecar.records import Memory
from sidecar.retrieval.resident.keys import ScopeKey, scope_of

ROW_BYTES = 5200  # per memory, besides its vector and its text (with its edges)
TEXT_FACTOR = 3  # bytes per character of a memory's text (record, BM25 terms)


class ScopeMembers:
    def __init__(self, dim: int) -> None:
        self.dim = dim
        self._lock = threading.Lock()
        self._seqs: dict[ScopeKey, dict[int, int]] = {}  # scope -> seq -> bytes
        self._bytes: dict[ScopeKey, int] = {}
        self._all = 0  # the sum of ``_bytes``
        self._scope: dict[int, ScopeKey] = {}  # seq -> scope
        self._labels: dict[ScopeKey, np.ndarray] = {}  # scope -> its seqs, until it changes

    def size(self, memory: Memory) -> int:
        return self.estimate(1, len(memory.content))

    def estimate(self, memories: int, mean_chars: float) -> int:
        """The bytes of ``memories`` held memories of ``mean_chars`` characters."""
        return int(memories * (ROW_BYTES + 4 * self.dim + TEXT_FACTOR * mean_chars))

    def put(self, memories: Sequence[Memory]) -> None:
        with self._lock:
            for m in memories:
                self._remove(m.seq)
                key = scope_of(m)
                size = self.size(m)
                self._seqs.setdefault(key, {})[m.seq] = size
                self._labels.pop(key, None)
                self._bytes[key] = self._bytes.get(key, 0) + size
                self._all += size
                self._scope[m.seq] = key

    def drop(self, seqs: Sequence[int]) -> None:
        with self._lock:
            for seq in seqs:
                self._remove(seq)

    def _remove(self, seq: int) -> None:
        key = self._scope.pop(seq, None)
        if key is None:
            return
        seqs = self._seqs[key]
        size = seqs.pop(seq)
        self._bytes[key] -= size
        self._all -= size
        self._labels.pop(key, None)
        if not seqs:
            del self._seqs[key], self._bytes[key]

    def seqs(self, key: ScopeKey) -> list[int]:
        with self._lock:
            return list(self._seqs.get(key, ()))

    def labels(self, keys: Sequence[ScopeKey]) -> np.ndarray:
        """The seqs held in ``keys`` (distinct scopes), as one int64 array."""
        with self._lock:
            parts = []
            for key in keys:
                found = self._labels.get(key)
                if found is None:
                    found = self._labels[key] = np.fromiter(
                        self._seqs.get(key, ()), np.int64)
                parts.append(found)
        return np.concatenate(parts) if parts else np.zeros(0, np.int64)

    def total(self, keys: Sequence[ScopeKey]) -> int:
        """How many memories ``keys`` (distinct scopes) hold."""
        return sum(len(self._seqs.get(key, ())) for key in keys)

    def all_bytes(self) -> int:
        """The bytes of every memory held (of scopes held or being loaded)."""
        return self._all

    def bytes_of(self, key: ScopeKey) -> int:
        return self._bytes.get(key, 0)

    def count(self, key: ScopeKey) -> int:
        return len(self._seqs.get(key, ()))
