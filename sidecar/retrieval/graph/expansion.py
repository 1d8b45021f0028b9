"""The memory edge graph, held in memory, and query-time expansion from relevant seeds.

Edges are loaded from the edge table at start and kept in sync through ``edges_changed``.
The walk is undirected (an edge links both of its ends) and only passes through memories the
query may return (``accept``). A memory reached from a seed scores

    importance(memory) x product over the path of (edge weight x relation multiplier)

keeping its best path; walks go up to ``max_depth`` edges from the seeds. Seeds themselves are
not listed. The list is sorted by score descending, then seq ascending.
"""

from __future__ import annotations

import threading
from collections.abc import Container, Iterable, Sequence

import numpy as np

from sidecar.records import Edge, Relation
from sidecar.retrieval.contract import Accept
from sidecar.retrieval.mirror import LiveMemories

_Key = tuple[str, Relation]  # (other end, relation)


class EdgeGraph:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._adj: dict[str, dict[_Key, float]] = {}
        self._into: dict[str, set[_Key]] = {}  # target -> (source, relation): the direction
        self._count = 0  # edges

    def __len__(self) -> int:
        return self._count

    def changed(self, added: Iterable[Edge], removed: Iterable[Edge]) -> None:
        with self._lock:
            for e in removed:
                if self._adj.get(e.source_id, {}).pop((e.target_id, e.relation), None) is not None:
                    self._count -= 1
                self._adj.get(e.target_id, {}).pop((e.source_id, e.relation), None)
                self._into.get(e.target_id, set()).discard((e.source_id, e.relation))
            for e in added:
                out = self._adj.setdefault(e.source_id, {})
                self._count += (e.target_id, e.relation) not in out
                out[(e.target_id, e.relation)] = e.weight
                self._adj.setdefault(e.target_id, {})[(e.source_id, e.relation)] = e.weight
                self._into.setdefault(e.target_id, set()).add((e.source_id, e.relation))

    def sources_into(self, targets: Iterable[str],
                     relations: Container[Relation]) -> list[tuple[str, str]]:
        """(source, target) of every edge of ``relations`` that points into ``targets``."""
        with self._lock:
            return [(source, target) for target in targets
                    for source, relation in self._into.get(target, ()) if relation in relations]

    def expand(
        self, seeds: Sequence[int], live: LiveMemories, accept: Accept,
        multipliers: dict[Relation, float], max_depth: int, limit: int,
    ) -> tuple[np.ndarray, np.ndarray]:
        """(seqs, scores) of memories reachable from ``seeds``, best first, at most ``limit``."""
        if not seeds or max_depth <= 0 or limit <= 0 or not self._adj:
            return np.zeros(0, np.int64), np.zeros(0, np.float64)
        seed_ids = {m.id for s in seeds if (m := live.get(s)) is not None}
        frontier = {i: 1.0 for i in seed_ids}
        best: dict[int, float] = {}
        for _ in range(max_depth):
            reached = self._step(frontier, seed_ids, multipliers)
            frontier = {}
            ok = _accepted(reached, live, accept)
            for other, (seq, f) in ok.items():
                memory = live.get(seq)
                if memory is None:
                    continue
                score = memory.importance * f
                if score > best.get(seq, -1.0):
                    best[seq] = score
                    frontier[other] = f
        if not best:
            return np.zeros(0, np.int64), np.zeros(0, np.float64)
        seqs = np.fromiter(best.keys(), np.int64, len(best))
        scores = np.fromiter(best.values(), np.float64, len(best))
        order = np.lexsort((seqs, -scores))[:limit]
        return seqs[order], scores[order]


    def _step(self, frontier: dict[str, float], seeds: set[str],
              multipliers: dict[Relation, float]) -> dict[str, float]:
        """One edge further from ``frontier``: each node reached (not a seed) with its best
        factor (one lock for the whole step)."""
        reached: dict[str, float] = {}
        empty: dict[_Key, float] = {}
        with self._lock:
            for node, factor in frontier.items():
                for (other, relation), weight in self._adj.get(node, empty).items():
                    if other in seeds:
                        continue
                    f = factor * weight * multipliers.get(relation, 1.0)
                    if f > reached.get(other, -1.0):
                        reached[other] = f
        return reached


def _accepted(
    reached: dict[str, float], live: LiveMemories, accept: Accept
) -> dict[str, tuple[int, float]]:
    pairs = [(i, s, f) for i, f in reached.items() if (s := live.seq_of(i)) is not None]
    if not pairs:
        return {}
    mask = accept(np.array([s for _, s, _ in pairs], np.int64))
    return {i: (s, f) for (i, s, f), ok in zip(pairs, mask, strict=True) if ok}
