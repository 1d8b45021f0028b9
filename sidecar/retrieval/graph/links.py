"""The graph's links and the adjacency a walk reads, kept current without a full rebuild per
edge change.

A link is one int64 (``link``): its two node numbers, low first, and the relation, so an
edge and its reverse with the same relation are one link. The walk reads two adjacencies
(``kernels.graph_walk``): one built from every link at some point, and one of the links
written since; a link removed or rewritten since has its entries in the first masked in
place. The first is rebuilt when more than ``rebuild_after`` links were written or removed since
(or the node count changed). Not thread-safe: the graph holds its lock around every call.
"""

from __future__ import annotations

import numpy as np

from kernels import graph_walk
from kernels.graph_walk import Adjacency

MAX_NODES = 1 << 29  # low node << 34 | high node << 3 | relation fits an int64


def link(a: int, b: int, relation: int) -> int:
    low, high = (a, b) if a <= b else (b, a)
    return (low << 34) | (high << 3) | relation


class Links:
    def __init__(self, rebuild_after: int = 4096) -> None:
        self.weights: dict[int, float] = {}  # link -> weight: every link
        self._rebuild_after = rebuild_after
        self._base: Adjacency | None = None
        self._in_base: set[int] = set()  # links with live entries in _base
        self._masked = 0  # links of _base removed or rewritten since
        self._recent: dict[int, float] = {}  # links written since _base was built
        self._recent_adjacency: Adjacency | None = None

    def __len__(self) -> int:
        return len(self.weights)

    def put(self, key: int, weight: float) -> None:
        self.weights[key] = weight
        self._unbase(key)
        if self._base is not None:
            self._recent[key] = weight
            self._recent_adjacency = None

    def remove(self, key: int) -> None:
        if self.weights.pop(key, None) is not None:
            self._unbase(key)
            if self._recent.pop(key, None) is not None:
                self._recent_adjacency = None

    def adjacencies(self, n: int) -> tuple[Adjacency, Adjacency]:
        """Both adjacencies over n nodes (every node a link names is below n)."""
        if (self._base is None or len(self._base.indptr) != n + 1
                or len(self._recent) + self._masked > self._rebuild_after):
            self._base = _build(self.weights, n)
            self._in_base = set(self.weights)
            self._masked = 0
            self._recent = {}
            self._recent_adjacency = None
        if self._recent_adjacency is None:
            self._recent_adjacency = _build(self._recent, n)
        return self._base, self._recent_adjacency

    def _unbase(self, key: int) -> None:
        if self._base is not None and key in self._in_base:
            self._in_base.discard(key)
            self._masked += 1
            graph_walk.unlink(self._base, key >> 34, (key >> 3) & ((1 << 31) - 1), key & 7)


def _build(weights: dict[int, float], n: int) -> Adjacency:
    keys = np.fromiter(weights.keys(), np.int64, len(weights))
    ends = np.stack((keys >> 34, (keys >> 3) & ((1 << 31) - 1)), axis=1)
    return graph_walk.adjacency(ends, keys & 7, np.fromiter(weights.values(), np.float64,
                                                            len(weights)), n)
