"""A cold scope read from the store into the indexes, and an evicted one taken out.

``read`` is the load's first step, holding no lock (``ResidentScopes`` calls it): the
scope's live rows with their embeddings, the edges from them (``sidecar.store.scope_rows``:
on PostgreSQL one round trip per 4,096 memories) and their BM25 terms. It
returns the second step, which puts them into the indexes (called under the read side).

The edges read are those *from* the scope's memories: the graph keeps every edge it was
given (a node of a memory not held is unbound, not removed), and every edge from a held
memory reached it (that memory's load, the start's edges of the pinned scopes both ways,
or the write listener), so an edge into the scope from a held memory is there already and
one from a memory not held links nothing yet.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from sidecar import heap
from sidecar.errors import Unavailable
from sidecar.records import Edge, Memory
from sidecar.retrieval.resident.keys import ScopeKey
from sidecar.store.edges import EdgeRepo
from sidecar.store.memories import MemoryRepo
from sidecar.store.scope_rows import scope_rows

UNAVAILABLE = (
    "this call needs memories this sidecar does not hold in memory (a scope not used since "
    "it started or evicted since), and the store they are read from is unavailable; retry "
    "once it is back ([retrieval] resident_agents keeps an agent's own memories held)")


@dataclass(frozen=True, slots=True)
class ScopeIndexes:
    """What a load puts into and an eviction takes out of (the hybrid engine's indexes)."""

    # A scope's memories, their embeddings and their BM25 terms (None: analysed there),
    # into every index.
    put: Callable[[ScopeKey, Sequence[Memory], np.ndarray, Sequence[list[str]] | None], None]
    drop: Callable[[Sequence[Memory]], None]  # memories out of every index
    link: Callable[[Sequence[Edge]], None]  # edges into the graph
    held_in: Callable[[ScopeKey], list[Memory]]  # the scope's held memories
    terms: Callable[[str], list[str]]  # a document's BM25 terms
    compact: Callable[[], object]  # after an eviction: BM25 renumbers once it pays


class ScopeLoader:
    def __init__(self, indexes: ScopeIndexes) -> None:
        self.indexes = indexes
        self._memories: MemoryRepo | None = None  # where a cold scope is read from
        self._edges: EdgeRepo | None = None  # and its memories' edges

    def attach(self, memories: MemoryRepo, edges: EdgeRepo) -> None:
        """The store cold scopes are read from (set when the indexes are loaded)."""
        self._memories, self._edges = memories, edges

    def read(self, key: ScopeKey) -> Callable[[], None]:
        """``key``'s stored rows, their edges and BM25 terms; returns what puts them into
        the indexes (``ResidentScopes`` calls both once)."""
        assert self._memories is not None and self._edges is not None
        try:
            batches, edges = scope_rows(self._memories, self._edges, *key)
        except Unavailable as away:
            raise Unavailable(UNAVAILABLE) from away
        analyse = self.indexes.terms
        terms = [[analyse(m.content) for m in batch] for batch, _ in batches]
        indexes = self.indexes

        def put() -> None:
            for (batch, vectors), analysed in zip(batches, terms, strict=True):
                indexes.put(key, batch, vectors, analysed)
            indexes.link(edges)
            heap.keep_loaded()  # held until evicted: out of the full collections
        return put

    def evict(self, key: ScopeKey) -> None:
        self.indexes.drop(self.indexes.held_in(key))
        self.indexes.compact()  # once evictions left most document ids unused
