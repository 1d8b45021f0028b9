"""Exact scans of one agent's live vectors (its own memories; '' = the shared ones) for the
vault: the near-duplicate gate scans the engine's vector matrix and mirror, with the
writer's scopes held (loaded first when cold: ``resident``), so it needs no copy of the
embeddings; hygiene reads every user's rows of the agent from the store (``agent_rows``),
which would not fit the resident budget. Always exact (the dense matrix, never hnsw)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from sidecar.retrieval.mirror import LiveMemories
from sidecar.retrieval.resident.keys import writer_scopes
from sidecar.retrieval.resident.lru import ResidentScopes
from sidecar.retrieval.vector.contract import VectorIndex

AgentRows = Callable[[str], tuple[list[str], np.ndarray]]


class ScopeScan:
    def __init__(self, vectors: VectorIndex, live: LiveMemories,
                 resident: ResidentScopes | None = None) -> None:
        self.vectors = vectors
        self.live = live
        self.resident = resident
        self.agent_rows: AgentRows | None = None  # from the store (set with a store)
        self.max_seq = 0  # the highest seq whose write every index has taken

    @property
    def dim(self) -> int:
        return self.vectors.dim

    def heard(self, seq: int) -> None:
        """Writes up to ``seq`` are in every index (called after the indexes are updated)."""
        self.max_seq = max(self.max_seq, seq)

    def similar(self, agent_id: str, vector: np.ndarray, floor: float,
                user_id: str = "") -> list[tuple[str, float]]:
        """(id, cosine) of the agent's held rows with cosine >= floor, most similar first
        (then by seq); the agent's general knowledge and ``user_id``'s memories are held."""
        if self.resident is None:
            return self._similar(agent_id, vector, floor)
        # Inside the write's transaction: no eviction here (it would wait for searches).
        with self.resident.using(writer_scopes(agent_id, user_id), evict=False):
            return self._similar(agent_id, vector, floor)

    def _similar(self, agent_id: str, vector: np.ndarray,
                 floor: float) -> list[tuple[str, float]]:
        labels, scores = self.vectors.scan(vector, self.live.scope(agent_id))
        keep = np.flatnonzero(scores >= floor)
        order = keep[np.lexsort((labels[keep], -scores[keep]))]
        found = []
        for i in order.tolist():
            memory = self.live.get(int(labels[i]))
            if memory is not None:  # forgotten since the scan
                found.append((memory.id, float(scores[i])))
        return found

    def rows(self, agent_id: str) -> tuple[list[str], np.ndarray]:
        """Ids and a copy of the agent's live rows (every user's), in seq order."""
        if self.agent_rows is not None:
            return self.agent_rows(agent_id)
        labels, matrix = self.vectors.rows(self.live.scope(agent_id))
        ids = [self.live.get(label) for label in labels.tolist()]
        keep = [i for i, memory in enumerate(ids) if memory is not None]
        if len(keep) < len(ids):
            matrix = matrix[keep]
        return [m.id for m in ids if m is not None], matrix
