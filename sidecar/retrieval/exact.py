"""Exact vector search: a dense in-memory matrix of live embeddings, brute-force cosine.

The reference every faster path is checked against, and the engine below the size where
an approximate index pays.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence

import numpy as np

from sidecar.embedding import Embedder
from sidecar.records import Edge, Memory
from sidecar.retrieval.contract import Hit, SearchQuery, SearchResult
from sidecar.store.memories import MemoryRepo


class ExactVectorRetriever:
    def __init__(self, embedder: Embedder, dim: int = 384) -> None:
        self.embedder = embedder
        self._lock = threading.RLock()
        self._vectors = np.zeros((0, dim), dtype=np.float32)
        self._memories: list[Memory] = []
        self._row: dict[str, int] = {}

    def load(self, repo: MemoryRepo) -> None:
        for memories, vectors in repo.iter_live_embeddings():
            self.memories_stored(memories, vectors)

    def __len__(self) -> int:
        return len(self._row)

    # --- MemoryListener -------------------------------------------------------------------

    def memories_stored(self, memories: Sequence[Memory], embeddings: np.ndarray) -> None:
        with self._lock:
            new = [i for i, m in enumerate(memories) if m.id not in self._row]
            for i, memory in enumerate(memories):
                if memory.id in self._row:
                    row = self._row[memory.id]
                    self._memories[row] = memory
                    self._vectors[row] = embeddings[i]
            if new:
                start = len(self._memories)
                self._vectors = np.vstack([self._vectors, embeddings[new]])
                for offset, i in enumerate(new):
                    self._memories.append(memories[i])
                    self._row[memories[i].id] = start + offset

    def memories_forgotten(self, memories: Sequence[Memory]) -> None:
        with self._lock:
            gone = {m.id for m in memories} & self._row.keys()
            if not gone:
                return
            keep = [r for r, m in enumerate(self._memories) if m.id not in gone]
            self._vectors = self._vectors[keep]
            self._memories = [self._memories[r] for r in keep]
            self._row = {m.id: r for r, m in enumerate(self._memories)}

    def edges_changed(self, added: Sequence[Edge], removed: Sequence[Edge]) -> None:
        return None

    # --- Retriever ------------------------------------------------------------------------

    def embedding_of(self, memory_id: str) -> np.ndarray | None:
        with self._lock:
            row = self._row.get(memory_id)
            return None if row is None else self._vectors[row].copy()

    def search(self, query: SearchQuery) -> SearchResult:
        start = time.perf_counter_ns()
        vector = query.embedding
        if vector is None:
            vector = self.embedder.embed_one(query.text)
        embedded = time.perf_counter_ns()
        with self._lock:
            vectors, memories = self._vectors, self._memories
        scores = vectors @ vector
        allowed = np.fromiter(
            (m.visible_to(query.agent_id) and (not query.types or m.type in query.types)
             for m in memories),
            dtype=bool, count=len(memories),
        )
        scores = np.where(allowed, scores, -np.inf)
        k = min(query.limit, int(allowed.sum()))
        top = np.argpartition(-scores, k - 1)[:k] if k else np.zeros(0, dtype=np.int64)
        top = top[np.argsort(-scores[top], kind="stable")]
        hits = [
            Hit(memory=memories[r], score=float(scores[r]), cosine=float(scores[r]),
                vector_rank=rank + 1)
            for rank, r in enumerate(top)
        ]
        done = time.perf_counter_ns()
        return SearchResult(
            hits=hits, query_embedding=vector,
            timings_us={"embed": (embedded - start) // 1000, "vector": (done - embedded) // 1000},
        )
