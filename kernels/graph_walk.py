"""Graph expansion over an undirected adjacency in CSR form, and the choice of its seeds.

Nodes are dense integers; ``node_seq`` maps a node to its memory's label (-1: no live memory)
and ``seq_node`` back. From the seed labels, each walk step reaches every neighbour (not a
seed) of the frontier with its best factor ``factor x weight x multiplier[relation]``; a
reached node counts only if its label passes the visibility filter (in range, alive, shared
or owned by ``code``, of a ``wanted`` type when any), and scores ``importance x factor``. A
node whose best score rose joins the next frontier. The result: labels and scores, score
descending then label ascending, at most ``limit``.

Scratch arrays (one slot per node) are reused across calls; a slot is valid when its stamp
equals the call's (or the step's) stamp, so nothing is cleared between calls. Callers that
share the scratch must not run concurrently.
"""

from __future__ import annotations

import numpy as np

from kernels.flags import kernel

# Rows of the int64 scratch: stamps (seed, reached, best), then lists (reached, frontier,
# next frontier, best). Rows of the float64 scratch: reached factor, best score, frontier
# factor, next frontier factor.
INT_ROWS = 7
FLOAT_ROWS = 4
MAX_DEPTH = 255  # step stamps are stamp * (MAX_DEPTH + 1) + depth


@kernel
def _visible(seq: int, alive: np.ndarray, owner: np.ndarray, code: int, kind: np.ndarray,
             wanted: np.ndarray) -> bool:
    idx = seq if 0 < seq < len(alive) else 0
    if not alive[idx]:
        return False
    if owner[idx] != 0 and owner[idx] != code:
        return False
    if len(wanted) == 0:
        return True
    for w in wanted:
        if kind[idx] == w:
            return True
    return False


@kernel
def _walk(
    indptr: np.ndarray, nbr: np.ndarray, rel: np.ndarray, weight: np.ndarray,
    node_seq: np.ndarray, seq_node: np.ndarray, found: tuple[np.ndarray, ...],
    threshold: float, seed_limit: int, multipliers: np.ndarray,
    alive: np.ndarray, owner: np.ndarray, code: int, kind: np.ndarray, wanted: np.ndarray,
    importance: np.ndarray, max_depth: int, limit: int, stamp: int,
    ints: np.ndarray, floats: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    seeds = _seeds(found, importance, threshold, seed_limit)
    seed_at, reached_at, best_at = ints[0], ints[1], ints[2]
    reached, front, nxt, best_nodes = ints[3], ints[4], ints[5], ints[6]
    reached_f, best, front_f, nxt_f = floats[0], floats[1], floats[2], floats[3]
    n_front = 0
    for s in seeds:
        node = seq_node[s] if 0 <= s < len(seq_node) else -1
        if node >= 0 and seed_at[node] != stamp:
            seed_at[node] = stamp
            front[n_front] = node
            front_f[n_front] = 1.0
            n_front += 1
    n_best = 0
    for depth in range(max_depth):
        step = stamp * (MAX_DEPTH + 1) + depth  # distinct per step of every call
        n_reached = 0
        for i in range(n_front):
            node, factor = front[i], front_f[i]
            for j in range(indptr[node], indptr[node + 1]):
                other = nbr[j]
                if seed_at[other] == stamp:
                    continue
                f = factor * weight[j] * multipliers[rel[j]]
                known = reached_at[other] == step
                if f > (reached_f[other] if known else -1.0):
                    reached_f[other] = f
                    if not known:
                        reached_at[other] = step
                        reached[n_reached] = other
                        n_reached += 1
        n_front = 0
        for i in range(n_reached):
            other = reached[i]
            seq = node_seq[other]
            if seq < 0 or not _visible(seq, alive, owner, code, kind, wanted):
                continue
            f = reached_f[other]
            score = importance[seq] * f
            known = best_at[other] == stamp
            if score > (best[other] if known else -1.0):
                best[other] = score
                if not known:
                    best_at[other] = stamp
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
        scores[i] = best[best_nodes[i]]
    by_seq = np.argsort(seqs, kind="mergesort")
    keys = np.empty(n_best, np.float64)
    for i in range(n_best):
        keys[i] = -scores[by_seq[i]]
    order = by_seq[np.argsort(keys, kind="mergesort")][:limit]
    return seqs[order], scores[order]


def walk(
    csr: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray], node_seq: np.ndarray,
    seq_node: np.ndarray, found: tuple[np.ndarray, ...], threshold: float, seed_limit: int,
    multipliers: np.ndarray, visibility: tuple[np.ndarray, np.ndarray, int, np.ndarray,
                                               np.ndarray],
    importance: np.ndarray, max_depth: int, limit: int, stamp: int,
    scratch: tuple[np.ndarray, np.ndarray],
) -> tuple[np.ndarray, np.ndarray]:
    """(labels, scores) reached from the seeds of ``found`` (as ``seeds``), best first, at
    most ``limit``.

    ``found``: int64 label arrays, each best first; ``csr``: (indptr, neighbour, relation,
    weight) over n nodes, both directions of every edge; ``multipliers`` indexed by relation;
    ``visibility``: (alive, owner, code, kind, wanted) as ``LiveMemories.visibility``;
    ``scratch``: int64 (INT_ROWS, n) and float64 (FLOAT_ROWS, n), zeroed when new, ``stamp``
    >= 1 and above every stamp used on them before.
    """
    indptr, nbr, rel, weight = csr
    ints, floats = scratch
    n = len(indptr) - 1
    if ints.shape != (INT_ROWS, n) or floats.shape != (FLOAT_ROWS, n):
        raise ValueError(f"scratch must be ({INT_ROWS}, {n}) int64 and ({FLOAT_ROWS}, {n}) "
                         "float64")
    if len(node_seq) != n or len(nbr) != indptr[-1]:
        raise ValueError("node_seq must have one entry per node, the CSR one per indptr end")
    if stamp < 1 or not 0 <= max_depth <= MAX_DEPTH:
        raise ValueError(f"stamp must be >= 1 and max_depth in [0, {MAX_DEPTH}]")
    if not found:
        return np.zeros(0, np.int64), np.zeros(0, np.float64)
    alive, owner, code, kind, wanted = visibility
    return _walk(indptr, nbr, rel, weight, node_seq, seq_node,
                 found, float(threshold), int(seed_limit), multipliers, alive, owner,
                 int(code), kind, wanted, importance, int(max_depth), int(limit), int(stamp),
                 ints, floats)


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
    csr = (np.array([0, 1, 2]), np.array([1, 0]), np.array([1, 1]), np.array([0.5, 0.5]))
    vis = (np.ones(3, bool), np.zeros(3, np.int32), -1, np.zeros(3, np.int8),
           np.zeros(0, np.int8))
    scratch = (np.zeros((INT_ROWS, 2), np.int64), np.zeros((FLOAT_ROWS, 2)))
    for lists in range(1, 4):
        found = (np.array([1]),) * lists
        walk(csr, np.array([1, 2]), np.array([-1, 0, 1]), found, 0.5, 5, np.ones(7), vis,
             np.ones(3), 2, 10, lists, scratch)
        seeds(found, np.ones(3), 0.5, 5)
    return scratch
