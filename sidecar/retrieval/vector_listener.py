"""Keeps a vector index in step with the write path (a MemoryListener).

``memories_stored`` (insert, update with a new embedding, revival of a forgotten memory) ->
``index.add(seqs, embeddings)``; ``memories_forgotten`` -> ``index.remove(seqs)``. Called by
MemoryService after each commit, in commit order.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from sidecar.records import Edge, Memory
from sidecar.retrieval.vectors import VectorIndex


def seqs_of(memories: Sequence[Memory]) -> np.ndarray:
    return np.fromiter((m.seq for m in memories), dtype=np.int64, count=len(memories))


class VectorIndexListener:
    def __init__(self, index: VectorIndex) -> None:
        self.index = index

    def memories_stored(self, memories: Sequence[Memory], embeddings: np.ndarray) -> None:
        self.index.add(seqs_of(memories), embeddings)

    def memories_forgotten(self, memories: Sequence[Memory]) -> None:
        self.index.remove(seqs_of(memories))

    def edges_changed(self, added: Sequence[Edge], removed: Sequence[Edge]) -> None:
        return None
