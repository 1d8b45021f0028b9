"""BM25 statistics per group of documents (a scope), so a query's idf and average length can
be those of the groups it reads: documents of other groups held in the same index change
no score.

A group keeps its document count, total length and document frequency per term id. The
statistics of several groups are their sums; the mean idf of the vocabulary (rank-bm25's
floor of a negative idf) is over the union of their terms, computed only when a query term's
idf is negative and cached until one of the groups changes.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field

import numpy as np


@dataclass(slots=True)
class _Group:
    n: int = 0
    total_len: float = 0.0
    df: Counter[int] = field(default_factory=Counter)
    version: int = 0


@dataclass(frozen=True, slots=True)
class Stats:
    """What a query's scores depend on: documents, total length, and the frequencies and
    vocabulary mean idf of ``groups`` (None: every document of the index)."""

    n: int
    total_len: float
    groups: tuple[int, ...] | None

    @property
    def avgdl(self) -> float:
        return self.total_len / self.n if self.n else 0.0


class GroupStats:
    """Not thread-safe: the index calls it under its own lock."""

    def __init__(self) -> None:
        self._groups: dict[int, _Group] = {}
        self._means: dict[tuple[object, ...], float] = {}
        self._clock = 0  # a group's version is the clock at its last change: never repeated

    def _changed(self, g: _Group) -> None:
        self._clock += 1
        g.version = self._clock

    def __len__(self) -> int:
        return len(self._groups)

    def added(self, group: int, terms: np.ndarray, length: float) -> None:
        g = self._groups.get(group)
        if g is None:
            g = self._groups[group] = _Group()
        g.n += 1
        g.total_len += length
        g.df.update(terms.tolist())
        self._changed(g)

    def added_batch(self, groups: Sequence[int], pair_doc: np.ndarray, pair_term: np.ndarray,
                    lengths: np.ndarray) -> None:
        """``added`` of each document i of a batch: of group ``groups[i]``, with the distinct
        terms ``pair_term[pair_doc == i]`` and the length ``lengths[i]`` (one update per
        group: a scope's load is one)."""
        of_doc = np.asarray(groups, np.int64)
        for group in dict.fromkeys(groups):
            mine = of_doc == group
            g = self._groups.get(group)
            if g is None:
                g = self._groups[group] = _Group()
            g.n += int(mine.sum())
            g.total_len += float(lengths[mine].sum())
            g.df.update(pair_term[mine[pair_doc]].tolist())
            self._changed(g)

    def removed(self, group: int, terms: np.ndarray, length: float) -> None:
        g = self._groups[group]
        g.n -= 1
        g.total_len -= length
        df = g.df
        for term in terms.tolist():
            left = df[term] - 1
            if left > 0:
                df[term] = left
            else:
                del df[term]
        self._changed(g)
        if g.n == 0:
            del self._groups[group]
            self._means.clear()

    def stats(self, groups: Collection[int]) -> Stats:
        held = tuple(sorted(g for g in set(groups) if g in self._groups))
        return Stats(sum(self._groups[g].n for g in held),
                     sum(self._groups[g].total_len for g in held), held)

    def stamp(self, stats: Stats) -> tuple[int, ...]:
        """The versions of the stats' groups: the same while none of them changed."""
        assert stats.groups is not None
        return tuple(self._groups[g].version for g in stats.groups)

    def df(self, stats: Stats, ids: np.ndarray) -> np.ndarray:
        """Document frequency of each term id (ids < 0: 0) in the stats' groups."""
        assert stats.groups is not None
        out = np.zeros(len(ids), np.float64)
        for group in stats.groups:
            get = self._groups[group].df.get
            out += np.fromiter((get(t, 0) for t in ids.tolist()), np.float64, len(ids))
        return out

    def mean_idf(self, stats: Stats) -> float:
        """rank-bm25's mean idf over the terms the stats' groups hold."""
        assert stats.groups is not None
        key = (stats.groups, self.stamp(stats))
        mean = self._means.get(key)
        if mean is None:
            if len(self._means) > 256:
                self._means.clear()
            mean = self._means[key] = _mean_idf(
                [self._groups[g].df for g in stats.groups], stats.n)
        return mean


def _mean_idf(dfs: list[Counter[int]], n: int) -> float:
    if not dfs or not any(dfs):
        return 0.0
    ids = np.concatenate([np.fromiter(d.keys(), np.int64, len(d)) for d in dfs])
    counts = np.concatenate([np.fromiter(d.values(), np.float64, len(d)) for d in dfs])
    _, where = np.unique(ids, return_inverse=True)
    df = np.bincount(where, weights=counts)
    return float(np.mean(np.log(n - df + 0.5) - np.log(df + 0.5)))
