"""Writes committed by other sidecars on a shared store, applied to this one's listeners.

The change feed (``sidecar.store.postgres.feed``) names what changed; ``RemoteWrites`` reads
the rows as they are now and calls the same listeners a local write calls (vectors, BM25,
graph, mirror), with local writes paused so the two never interleave.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager

import numpy as np

from sidecar.memory.service import MemoryService
from sidecar.records import Edge, Memory, MemoryType, Relation
from sidecar.store.postgres.feed import Change

log = logging.getLogger(__name__)


# The index labels of live memories (-1: not live), and the scrub of erased labels' bytes.
LabelsOf = Callable[[Sequence[str]], list[int]]
Scrub = Callable[[list[int]], None]
Erased = Callable[[list[str]], object]  # ids of memories deleted for good


class RemoteWrites:
    def __init__(self, service: MemoryService, labels_of: LabelsOf | None = None,
                 scrub: Scrub | None = None) -> None:
        """``labels_of`` and ``scrub``: a memory another sidecar erased leaves this one's
        index files too."""
        self.service = service
        self.labels_of = labels_of
        self.scrub = scrub
        # Told after the indexes dropped them (the channels' memory copies that quote them).
        self.erased: Erased = lambda ids: None

    def paused(self) -> AbstractContextManager[None]:
        return self.service.writes_paused()

    def apply(self, changes: Sequence[Change]) -> None:
        """Called with writes paused."""
        ids = list(dict.fromkeys(c.memory_id for c in changes if c.memory_id is not None))
        edges = list(dict.fromkeys(c.edge for c in changes if c.edge is not None))
        if ids:
            rows = self.service.memories.with_embeddings(ids)
            found = {m.id for m, _ in rows}
            self._memories(rows)
            gone = [i for i in ids if i not in found]
            if gone:  # deleted for good (an erasure): the indexes drop them by id
                labels = self.labels_of(gone) if self.labels_of is not None else []
                self.service.listeners.forgotten([_erased(i) for i in gone])
                if self.scrub is not None and any(label >= 0 for label in labels):
                    self.scrub([label for label in labels if label >= 0])
                self.erased(gone)
        if edges:
            self._edges(edges)

    def reload(self) -> None:
        """Every live row, every forgotten id and every edge, re-applied (searches keep
        being served meanwhile; local writes wait). Called with writes paused."""
        memories = self.service.memories
        for batch, vectors in memories.iter_live_embeddings():
            self.service.listeners.stored(batch, vectors)
        forgotten = memories.get_many(memories.forgotten_ids())
        self.service.listeners.forgotten(list(forgotten.values()))
        self.service.listeners.edges(self.service.edges.all(), [])
        log.info("store reloaded from the shared database")

    def _memories(self, rows: list[tuple[Memory, np.ndarray]]) -> None:
        live = [(m, v) for m, v in rows if not m.forgotten]
        gone = [m for m, _ in rows if m.forgotten]
        if live:
            self.service.listeners.stored([m for m, _ in live], np.vstack([v for _, v in live]))
        if gone:
            self.service.listeners.forgotten(gone)

    def _edges(self, keys: list[tuple[str, str, int]]) -> None:
        added: list[Edge] = []
        removed: list[Edge] = []
        for source, target, relation in keys:
            edge = self.service.edges.get(source, target, Relation(relation))
            if edge is not None:
                added.append(edge)
            else:
                removed.append(Edge(source, target, Relation(relation)))
        self.service.listeners.edges(added, removed)


def _erased(memory_id: str) -> Memory:
    """A memory row erased since the change: only its id (what the listeners drop by)."""
    return Memory(id=memory_id, content="", type=MemoryType.OBSERVATION, importance=0.0,
                  created_at=0, updated_at=0, last_accessed_at=0, access_count=0, source="",
                  channel_id="", agent_id="", forgotten=True, version=0)
