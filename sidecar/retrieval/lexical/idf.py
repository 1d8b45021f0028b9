"""A query term's idf, remembered per term id for the statistics it was computed over until
they change.

``BM25Index`` computes idf over the statistics a query reads: every document's (key None,
stamp: the index's version, bumped by every change of its documents) or a set of groups'
(key: the groups, stamp: their versions, read from one clock, so a group emptied and filled
again never repeats one). A term's idf is a function of those statistics alone (rank-bm25's
floor of a negative idf, the vocabulary's mean idf, included), so an entry is exact while the
stamp is the same; a table whose stamp changed starts afresh. A write to one group leaves
the tables of queries that do not read it. Term ids mean nothing after the index compacts:
it starts a new memo then. Each table holds at most the terms queried (the vocabulary).
"""

from __future__ import annotations

from collections.abc import Hashable

# Tables (sets of groups) kept at most; all are dropped when more are asked for.
MAX_TABLES = 256


class IdfMemo:
    """Not thread-safe: the index calls it under its own lock."""

    def __init__(self, limit: int = MAX_TABLES) -> None:
        self.limit = limit
        self._tables: dict[Hashable, tuple[Hashable, dict[int, float]]] = {}

    def table(self, key: Hashable, stamp: Hashable) -> dict[int, float]:
        """Term id -> idf over the statistics ``key`` at ``stamp`` (filled by the caller)."""
        held = self._tables.get(key)
        if held is not None and held[0] == stamp:
            return held[1]
        if held is None and len(self._tables) >= self.limit:
            self._tables.clear()
        table: dict[int, float] = {}
        self._tables[key] = (stamp, table)
        return table
