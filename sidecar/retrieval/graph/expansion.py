"""The memory edge graph, held in memory, and query-time expansion from relevant seeds.

Edges are loaded from the edge table at start and kept in sync through ``edges_changed``.
The walk is undirected (an edge links both of its ends; an edge and its reverse with the same
relation are one link, of the weight written last) and only passes through memories the
query may return (the ``Visibility`` of ``LiveMemories.filter``). A memory reached from a
seed scores

    importance(memory) x product over the path of (edge weight x relation multiplier)

keeping its best path; walks go up to ``max_depth`` edges from the seeds. Seeds themselves are
not listed. The list is sorted by score descending, then seq ascending.

Memory ids are interned as dense node numbers, mapped to their live seq (kept current by
``memories_stored`` / ``memories_forgotten``); seed choice and the walk run in one kernel
(``kernels.graph_walk``) over the adjacency of ``Links``.
"""

from __future__ import annotations

import threading
from collections.abc import Container, Iterable

import numpy as np

from kernels import graph_walk
from sidecar.records import Edge, Memory, Relation
from sidecar.retrieval.graph.links import MAX_NODES, Links, link
from sidecar.retrieval.mirror import LiveMemories, Visibility

_Key = tuple[str, Relation]  # (other end, relation)


class EdgeGraph:
    def __init__(self, live: LiveMemories, rebuild_after: int = 4096) -> None:
        self.live = live
        self._lock = threading.Lock()
        self._links = Links(rebuild_after)  # see Links
        self._into: dict[str, set[_Key]] = {}  # target -> (source, relation): the direction
        self._node: dict[str, int] = {}  # memory id -> node
        self._node_seq = np.full(1024, -1, np.int64)  # node -> live seq (-1: none)
        self._seq_node = np.full(1024, -1, np.int64)  # live seq -> node (-1: none)
        self._scratch = graph_walk.scratch(len(self._node_seq))
        self._stamp = 0

    def __len__(self) -> int:
        return len(self._links)

    def changed(self, added: Iterable[Edge], removed: Iterable[Edge]) -> None:
        with self._lock:
            for e in removed:
                a, b = self._node.get(e.source_id), self._node.get(e.target_id)
                if a is not None and b is not None:
                    self._links.remove(link(a, b, e.relation))
                self._into.get(e.target_id, set()).discard((e.source_id, e.relation))
            for e in added:
                a, b = self._intern(e.source_id), self._intern(e.target_id)
                self._links.put(link(a, b, e.relation), e.weight)
                self._into.setdefault(e.target_id, set()).add((e.source_id, e.relation))

    def memories_stored(self, memories: Iterable[Memory]) -> None:
        """Memories became live (new or edited): their nodes point at their seqs."""
        with self._lock:
            for m in memories:
                node = self._node.get(m.id)
                if node is not None:
                    self._bind(node, m.seq)

    def reserve(self, seqs: int) -> None:
        """The seq -> node column with room for seqs below ``seqs``, allocated now rather
        than grown (a copy of the whole column) inside the call whose load crosses a size."""
        with self._lock:
            if seqs > len(self._seq_node):
                self._seq_node = _grown(self._seq_node, seqs)

    def memories_forgotten(self, memories: Iterable[Memory]) -> None:
        with self._lock:
            for m in memories:
                node = self._node.get(m.id)
                if node is not None and (seq := int(self._node_seq[node])) >= 0:
                    self._node_seq[node] = -1
                    self._seq_node[seq] = -1

    def sources_into(self, targets: Iterable[str],
                     relations: Container[Relation]) -> list[tuple[str, str]]:
        """(source, target) of every edge of ``relations`` that points into ``targets``."""
        with self._lock:
            return [(source, target) for target in targets
                    for source, relation in self._into.get(target, ()) if relation in relations]

    def expand(
        self, found: tuple[np.ndarray, ...], seed_threshold: float, seed_limit: int,
        visibility: Visibility, factors: np.ndarray, max_depth: int, limit: int,
    ) -> tuple[np.ndarray, np.ndarray]:
        """(seqs, scores) of memories reachable from the seeds, best first, at most ``limit``.

        Seeds: the labels of ``found`` (int64 lists, each best first) with importance >=
        ``seed_threshold``, best rank then seq first, at most ``seed_limit``; ``factors``:
        the relation multipliers (``relation_factors``)."""
        if not found or seed_limit <= 0 or max_depth <= 0 or limit <= 0 or not self._links:
            return np.zeros(0, np.int64), np.zeros(0, np.float64)
        with self._lock:  # edges stay as they are for the whole walk
            n = len(self._node_seq)
            if len(self._scratch.marks) != n:
                self._scratch = graph_walk.scratch(n)
            self._stamp += 1
            return graph_walk.walk(
                self._links.adjacencies(n), self._scratch, self._node_seq, self._seq_node,
                found, seed_threshold, seed_limit, factors, visibility, self.live.importance,
                max_depth, limit, self._stamp)

    def _intern(self, memory_id: str) -> int:
        node = self._node.get(memory_id)
        if node is None:
            node = self._node[memory_id] = len(self._node)
            if node >= MAX_NODES:
                raise OverflowError("too many memories with edges for the graph")
            if node >= len(self._node_seq):
                self._node_seq = _grown(self._node_seq, 2 * node)
            seq = self.live.seq_of(memory_id)
            if seq is not None:
                self._bind(node, seq)
        return node

    def _bind(self, node: int, seq: int) -> None:
        if seq >= len(self._seq_node):
            self._seq_node = _grown(self._seq_node, 2 * seq + 1)
        self._node_seq[node] = seq
        self._seq_node[seq] = node


def relation_factors(multipliers: dict[Relation, float]) -> np.ndarray:
    """Multipliers indexed by relation value (1.0 where not given)."""
    factors = np.ones(max(Relation) + 1, np.float64)
    for relation, value in multipliers.items():
        factors[relation] = value
    return factors


def _grown(a: np.ndarray, size: int) -> np.ndarray:
    out = np.full(size, -1, a.dtype)
    out[:len(a)] = a
    return out
