"""The graph's links: the two adjacencies a walk reads always hold exactly the live links."""

from __future__ import annotations

import numpy as np
import pytest

from sidecar.retrieval.graph.links import Links, link


def entries(links: Links, n: int) -> set[tuple[int, int, int, float]]:
    """(node, neighbour, relation, weight) of every live entry of both adjacencies."""
    out = set()
    for adj in links.adjacencies(n):
        for node in range(n):
            for j in range(adj.indptr[node], adj.indptr[node + 1]):
                if adj.weight[j] >= 0:
                    entry = (node, int(adj.nbr[j]), int(adj.rel[j]), float(adj.weight[j]))
                    assert entry not in out  # a link is in one of the two, once
                    out.add(entry)
    return out


def expected(weights: dict[tuple[int, int, int], float]) -> set[tuple[int, int, int, float]]:
    return ({(a, b, r, w) for (a, b, r), w in weights.items()}
            | {(b, a, r, w) for (a, b, r), w in weights.items()})


@pytest.mark.parametrize("rebuild_after", [0, 3, 50, 4096])
def test_puts_and_removes_keep_both_adjacencies_exact(rebuild_after: int) -> None:
    rng = np.random.default_rng(rebuild_after)
    links, truth = Links(rebuild_after), {}
    n = 12
    for step in range(300):
        a, b = (int(x) for x in rng.integers(0, n - 2 if step < 150 else n, 2))
        r = int(rng.integers(1, 4))
        key = (min(a, b), max(a, b), r)
        if rng.random() < 0.35:
            links.remove(link(a, b, r))
            truth.pop(key, None)
        else:
            w = float(rng.choice([0.25, 0.5, 1.0]))
            links.put(link(b, a, r), w)
            truth[key] = w
        if step % 7 == 0:
            assert entries(links, n) == expected(truth)
            assert len(links) == len(truth)
    assert entries(links, n + 4) == expected(truth)  # more nodes: a fresh build
