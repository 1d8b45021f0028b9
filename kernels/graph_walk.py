"""Graph expansion over an undirected adjacency in CSR form, and the choice of its seeds.

Nodes are dense integers; ``node_seq`` maps a node to its memory's label (-1: no live memory)
and ``seq_node`` back. Seeds: the distinct labels of the earlier lists by best rank, then
label, with importance >= a threshold, at most a limit. From the seeds, each walk step reaches
every neighbour (not a seed) of the frontier with its best factor ``factor x weight x
multiplier[relation]``; a reached node counts only if its label passes the visibility filter
(in range, alive, shared or owned by ``code``, of a ``wanted`` type when any, not private
or private under one of ``keys``), and scores
``importance x factor``. A node whose best score rose joins the next frontier. The result:
labels and scores, score descending then label ascending, at most ``limit``.

A walk runs over two adjacencies at once (a large one rebuilt now and then, and a small one of
the edges written since; an edge removed from the large one has a negative weight there). Its
``Scratch`` (a slot per node) is reused across walks: a slot is valid when its stamp equals
the walk's (or the step's), so nothing is cleared between walks; walks sharing a scratch must
not run concurrently.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from kernels.flags import kernel

MAX_DEPTH = 255  # step stamps are stamp * (MAX_DEPTH + 1) + depth


class Adjacency(NamedTuple):
    """Both directions of every edge, grouped by node (``adjacency``). An entry of negative
    weight is no edge (``unlink``)."""

    indptr: np.ndarray  # (n + 1,) int64: node i's entries are [indptr[i], indptr[i + 1])
    nbr: np.ndarray  # int64 neighbour of each entry
    rel: np.ndarray  # int64 relation of each entry
    weight: np.ndarray  # float64 weight of each entry


class Scratch(NamedTuple):
    """Space a walk over n nodes reuses (``scratch``)."""

    marks: np.ndarray  # (n, 3) int64: seed, reached and best stamps per node
    values: np.ndarray  # (n, 2) float64: reached factor and best score per node
    lists: np.ndarray  # (4, n) int64: reached, frontier, next frontier, best nodes
    factors: np.ndarray  # (2, n) float64: frontier and next frontier factors


def scratch(n: int) -> Scratch:
    return Scratch(np.zeros((n, 3), np.int64), np.zeros((n, 2)), np.zeros((4, n), np.int64),
                   np.zeros((2, n)))


def adjacency(ends: np.ndarray, relation: np.ndarray, weight: np.ndarray, n: int) -> Adjacency:
    """The adjacency of n nodes from undirected edges: ``ends`` (m, 2) node pairs (an edge
    from a node to itself is listed once), ``relation`` (m,) int, ``weight`` (m,) float."""
    ends = np.asarray(ends, np.int64).reshape(-1, 2)
    relation, weight = np.asarray(relation, np.int64), np.asarray(weight, np.float64)
    if relation.shape != (len(ends),) or weight.shape != (len(ends),):
        raise ValueError("ends, relation and weight must have one row per edge")
    if len(ends) and (ends.min() < 0 or ends.max() >= n):
        raise ValueError(f"edge ends must be nodes in [0, {n})")
    low, high = ends[:, 0], ends[:, 1]
    two = low != high
    src = np.concatenate((low, high[two]))
    order = np.argsort(src, kind="stable")
    indptr = np.zeros(n + 1, np.int64)
    np.cumsum(np.bincount(src, minlength=n), out=indptr[1:])
    return Adjacency(indptr, np.concatenate((high, low[two]))[order],
                     np.concatenate((relation, relation[two]))[order],
                     np.concatenate((weight, weight[two]))[order])


def unlink(adj: Adjacency, a: int, b: int, relation: int) -> None:
    """Remove the edge (a, b, relation) from ``adj`` in place (both directions)."""
    for x, y in ((a, b), (b, a)):
        lo, hi = adj.indptr[x], adj.indptr[x + 1]
        hit = (adj.nbr[lo:hi] == y) & (adj.rel[lo:hi] == relation)
        adj.weight[lo:hi][hit] = -1.0


@kernel
def _visible(seq: int, alive: np.ndarray, owner: np.ndarray, code: int, kind: np.ndarray,
             wanted: np.ndarray, private: np.ndarray, keys: np.ndarray) -> bool:
    idx = seq if 0 < seq < len(alive) else 0
    if not alive[idx]:
        return False
    if owner[idx] != 0 and owner[idx] != code:
        return False
    whose = private[idx]
    if whose != 0:
        mine = False
        for k in keys:
            if whose == k:
                mine = True
        if not mine:
            return False
    if len(wanted) == 0:
        return True
    for w in wanted:
        if kind[idx] == w:
            return True
    return False


@kernel
def _seeds(found: tuple[np.ndarray, ...], importance: np.ndarray, threshold: float,
           limit: int) -> np.ndarray:
    total = 0
    for labels in found:
        total += len(labels)
    flat = np.empty(total, np.int64)
    ranks = np.empty(total, np.int64)
    k = 0
    for labels in found:
        for rank in range(len(labels)):
            flat[k] = labels[rank]
            ranks[k] = rank
            k += 1
    distinct = np.empty(total, np.int64)
    best = np.empty(total, np.int64)
    m = 0
    for i in np.argsort(flat, kind="mergesort"):
        if m > 0 and distinct[m - 1] == flat[i]:
            best[m - 1] = min(best[m - 1], ranks[i])
        else:
            distinct[m] = flat[i]
            best[m] = ranks[i]
            m += 1
    out = np.empty(min(limit, m), np.int64)
    n = 0
    for i in np.argsort(best[:m], kind="mergesort"):  # rank, then label (distinct is sorted)
        label = distinct[i]
        if n >= limit:
            break
        if 0 <= label < len(importance) and importance[label] >= threshold:
            out[n] = label
            n += 1
    return out[:n]


@kernel
def _walk(
    indptr: np.ndarray, nbr: np.ndarray, rel: np.ndarray, weight: np.ndarray,
    indptr2: np.ndarray, nbr2: np.ndarray, rel2: np.ndarray, weight2: np.ndarray,
    marks: np.ndarray, values: np.ndarray, lists: np.ndarray, factors: np.ndarray,
    node_seq: np.ndarray, seq_node: np.ndarray, found: tuple[np.ndarray, ...],
    threshold: float, seed_limit: int, multipliers: np.ndarray,
    alive: np.ndarray, owner: np.ndarray, code: int, kind: np.ndarray, wanted: np.ndarray,
    private: np.ndarray, keys: np.ndarray,
    importance: np.ndarray, max_depth: int, limit: int, stamp: int,
) -> tuple[np.ndarray, np.ndarray]:
    reached, front, nxt, best_nodes = lists[0], lists[1], lists[2], lists[3]
    front_f, nxt_f = factors[0], factors[1]
    n_front = 0
    for s in _seeds(found, importance, threshold, seed_limit):
        node = seq_node[s] if 0 <= s < len(seq_node) else -1
        if node >= 0 and marks[node, 0] != stamp:
            marks[node, 0] = stamp
            front[n_front] = node
            front_f[n_front] = 1.0
            n_front += 1
    n_best = 0
    for depth in range(max_depth):
        step = stamp * (MAX_DEPTH + 1) + depth  # distinct per step of every walk
        n_reached = 0
        for i in range(n_front):
            node, factor = front[i], front_f[i]
            for half in range(2):  # the adjacency, then the one of recent edges
                ptr, to, how, w = ((indptr, nbr, rel, weight) if half == 0
                                   else (indptr2, nbr2, rel2, weight2))
                for j in range(ptr[node], ptr[node + 1]):
                    other = to[j]
                    if w[j] < 0.0 or marks[other, 0] == stamp:  # no edge, or a seed
                        continue
                    f = factor * w[j] * multipliers[how[j]]
                    known = marks[other, 1] == step
                    if f > (values[other, 0] if known else -1.0):
                        values[other, 0] = f
                        if not known:
                            marks[other, 1] = step
                            reached[n_reached] = other
                            n_reached += 1
        n_front = 0
        for i in range(n_reached):
            other = reached[i]
            seq = node_seq[other]
            if seq < 0 or not _visible(seq, alive, owner, code, kind, wanted, private, keys):
                continue
            f = values[other, 0]
            score = importance[seq] * f
            known = marks[other, 2] == stamp
            if score > (values[other, 1] if known else -1.0):
                values[other, 1] = score
                if not known:
                    marks[other, 2] = stamp
                    best_nodes[n_best] = other
                    n_best += 1
                nxt[n_front] = other
                nxt_f[n_front] = f
                n_front += 1
        front, nxt = nxt, front
        front_f, nxt_f = nxt_f, front_f
    seqs = np.empty(n_best, np.int64)
    scores = np.empty(n_best, np.float64)
    for i in range(n_best):
        seqs[i] = node_seq[best_nodes[i]]
        scores[i] = values[best_nodes[i], 1]
    by_seq = np.argsort(seqs, kind="mergesort")
    keys = np.empty(n_best, np.float64)
    for i in range(n_best):
        keys[i] = -scores[by_seq[i]]
    order = by_seq[np.argsort(keys, kind="mergesort")][:limit]
    return seqs[order], scores[order]


def walk(
    adjacencies: tuple[Adjacency, Adjacency], space: Scratch, node_seq: np.ndarray,
    seq_node: np.ndarray, found: tuple[np.ndarray, ...], threshold: float, seed_limit: int,
    multipliers: np.ndarray, visibility: tuple[np.ndarray, np.ndarray, int, np.ndarray,
                                               np.ndarray, np.ndarray, np.ndarray],
    importance: np.ndarray, max_depth: int, limit: int, stamp: int,
) -> tuple[np.ndarray, np.ndarray]:
    """(labels, scores) reached from the seeds of ``found`` (as ``seeds``), best first, at
    most ``limit``.

    ``adjacencies``: two over the same n nodes, walked as one (e.g. a large one and one of
    recent edges); ``space``: ``scratch(n)``, used by one walk at a time; ``found``: int64
    label arrays, each best first; ``node_seq``: (n,) int64, a label per node;
    ``multipliers`` (float64) indexed by relation; ``visibility``: (alive, owner, code,
    kind, wanted, private, keys) as ``LiveMemories.visibility``; ``stamp`` >= 1 and above
    every stamp used on ``space`` before.
    """
    n = len(node_seq)
    if any(len(a.indptr) != n + 1 for a in adjacencies) or len(space.marks) != n:
        raise ValueError("node_seq, the adjacencies and the scratch must have n nodes")
    if stamp < 1 or not 0 <= max_depth <= MAX_DEPTH:
        raise ValueError(f"stamp must be >= 1 and max_depth in [0, {MAX_DEPTH}]")
    if not found:
        return np.zeros(0, np.int64), np.zeros(0, np.float64)
    alive, owner, code, kind, wanted, private, keys = visibility
    return _walk(*adjacencies[0], *adjacencies[1], *space, node_seq, seq_node, found,
                 float(threshold), int(seed_limit), multipliers, alive, owner, int(code),
                 kind, wanted, private, keys, importance, int(max_depth), int(limit),
                 int(stamp))


def seeds(found: tuple[np.ndarray, ...], importance: np.ndarray, threshold: float,
          limit: int) -> np.ndarray:
    """Distinct labels of the ``found`` lists (each best first) by best (lowest) rank, then
    label; those in range of ``importance`` with importance >= ``threshold``; at most
    ``limit``."""
    found = tuple(np.ascontiguousarray(f, np.int64) for f in found)
    if not found:
        return np.zeros(0, np.int64)
    return _seeds(found, importance, float(threshold), max(int(limit), 0))


def warm_up() -> object:
    """Compile the kernels of this module on a tiny input, for 1 to 3 earlier lists."""
    adj = adjacency(np.array([[0, 1]]), np.array([1]), np.array([0.5]), 2)
    none = adjacency(np.zeros((0, 2)), np.zeros(0), np.zeros(0), 2)
    vis = (np.ones(3, bool), np.zeros(3, np.int32), -1, np.zeros(3, np.int8),
           np.zeros(0, np.int8), np.zeros(3, np.int32), np.zeros(0, np.int32))
    space = scratch(2)
    for lists in range(1, 4):
        found = (np.array([1]),) * lists
        walk((adj, none), space, np.array([1, 2]), np.array([-1, 0, 1]), found, 0.5, 5,
             np.ones(7), vis, np.ones(3), 2, 10, lists)
        seeds(found, np.ones(3), 0.5, 5)
    return space
