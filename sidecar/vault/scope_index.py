"""Live embeddings grouped by scope (agent_id; '' = shared), kept current by listener events.

The exact reference for similarity within a scope: a dense float32 matrix per scope, scanned
with one matrix-vector product. Rows are removed by moving the last row into the hole.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

import numpy as np

from sidecar.records import Edge, Memory
from sidecar.store.memories import MemoryRepo


class _Scope:
    def __init__(self, dim: int) -> None:
        self.matrix = np.zeros((16, dim), dtype=np.float32)
        self.ids: list[str] = []
        self.row: dict[str, int] = {}

    def put(self, memory_id: str, vector: np.ndarray) -> None:
        row = self.row.get(memory_id)
        if row is None:
            row = len(self.ids)
            if row == len(self.matrix):
                grown = np.zeros((2 * row, self.matrix.shape[1]), dtype=np.float32)
                grown[:row] = self.matrix
                self.matrix = grown
            self.ids.append(memory_id)
            self.row[memory_id] = row
        self.matrix[row] = vector

    def drop(self, memory_id: str) -> None:
        row = self.row.pop(memory_id, None)
        if row is None:
            return
        last = len(self.ids) - 1
        if row != last:
            moved = self.ids[last]
            self.ids[row] = moved
            self.matrix[row] = self.matrix[last]
            self.row[moved] = row
        self.ids.pop()


class ScopeVectors:
    """A MemoryListener. ``max_seq`` is the highest seq it has heard of."""

    def __init__(self, dim: int = 384) -> None:
        self.dim = dim
        self.max_seq = 0
        self._lock = threading.Lock()
        self._scopes: dict[str, _Scope] = {}
        self._scope_of: dict[str, str] = {}

    def load(self, repo: MemoryRepo) -> None:
        for memories, vectors in repo.iter_live_embeddings():
            self.memories_stored(memories, vectors)

    def __len__(self) -> int:
        return len(self._scope_of)

    def snapshot(self, agent_id: str) -> tuple[list[str], np.ndarray]:
        """Ids and a copy of the scope's live rows."""
        with self._lock:
            scope = self._scopes.get(agent_id)
            if scope is None:
                return [], np.zeros((0, self.dim), dtype=np.float32)
            n = len(scope.ids)
            return list(scope.ids), scope.matrix[:n].copy()

    def similar(self, agent_id: str, vector: np.ndarray, floor: float) -> list[tuple[str, float]]:
        """(id, cosine) of the scope's rows with cosine >= floor, most similar first."""
        with self._lock:
            scope = self._scopes.get(agent_id)
            if scope is None or not scope.ids:
                return []
            scores = scope.matrix[: len(scope.ids)] @ vector
            hits = np.flatnonzero(scores >= floor)
            ids = [scope.ids[i] for i in hits]
        order = np.argsort(-scores[hits], kind="stable")
        return [(ids[i], float(scores[hits[i]])) for i in order]

    # --- MemoryListener -------------------------------------------------------------------

    def memories_stored(self, memories: Sequence[Memory], embeddings: np.ndarray) -> None:
        with self._lock:
            for memory, vector in zip(memories, embeddings, strict=True):
                self.max_seq = max(self.max_seq, memory.seq)
                old = self._scope_of.get(memory.id)
                if old is not None and old != memory.agent_id:
                    self._scopes[old].drop(memory.id)
                if memory.forgotten:
                    self._forget(memory.id)
                    continue
                scope = self._scopes.setdefault(memory.agent_id, _Scope(self.dim))
                scope.put(memory.id, vector)
                self._scope_of[memory.id] = memory.agent_id

    def memories_forgotten(self, memories: Sequence[Memory]) -> None:
        with self._lock:
            for memory in memories:
                self._forget(memory.id)

    def edges_changed(self, added: Sequence[Edge], removed: Sequence[Edge]) -> None:
        return None

    def _forget(self, memory_id: str) -> None:
        scope = self._scope_of.pop(memory_id, None)
        if scope is not None:
            self._scopes[scope].drop(memory_id)
