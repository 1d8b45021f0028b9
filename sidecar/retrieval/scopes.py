"""Exact scans of one scope's live vectors (an agent's own memories; '' = the shared ones)
over the engine's vector matrix and mirror, so the vault's near-duplicate gate and hygiene
scans need no copy of the embeddings. Always exact (the dense matrix, never hnsw)."""

from __future__ import annotations

import numpy as np

from sidecar.retrieval.mirror import LiveMemories
from sidecar.retrieval.vector.contract import VectorIndex


class ScopeScan:
    def __init__(self, vectors: VectorIndex, live: LiveMemories) -> None:
        self.vectors = vectors
        self.live = live
        self.max_seq = 0  # the highest seq whose write every index has taken

    @property
    def dim(self) -> int:
        return self.vectors.dim

    def heard(self, seq: int) -> None:
        """Writes up to ``seq`` are in every index (called after the indexes are updated)."""
        self.max_seq = max(self.max_seq, seq)

    def similar(self, agent_id: str, vector: np.ndarray, floor: float) -> list[tuple[str, float]]:
        """(id, cosine) of the scope's rows with cosine >= floor, most similar first (then by
        seq)."""
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
        """Ids and a copy of the scope's live rows, in seq order."""
        labels, matrix = self.vectors.rows(self.live.scope(agent_id))
        ids = [self.live.get(label) for label in labels.tolist()]
        keep = [i for i, memory in enumerate(ids) if memory is not None]
        if len(keep) < len(ids):
            matrix = matrix[keep]
        return [m.id for m in ids if m is not None], matrix
