"""Graph expansion (``EdgeGraph`` over ``kernels.graph_walk``) against the dict reference."""

from __future__ import annotations

import numpy as np
import pytest

from kernels import graph_walk
from sidecar.records import Edge, Memory, MemoryType, Relation, Viewer
from sidecar.retrieval.contract import Accept
from sidecar.retrieval.graph.expansion import EdgeGraph, relation_factors
from sidecar.retrieval.mirror import LiveMemories
from tests import naive

AGENTS = ("", "", "bob", "eve")
USERS = ("", "", "", "u1", "u2")  # a memory of one end user of its agent
VIEWERS = (Viewer(""), Viewer("bob"), Viewer("bob", "u1"), Viewer("eve", "u2", "c1"),
           Viewer("bob", "u1", "c1", shared_channel=True), Viewer("", "u2", "c1"))
TYPES = list(MemoryType)


def mem(seq: int, importance: float, agent: str = "",
        kind: MemoryType = MemoryType.FACT, user: str = "", channel: str = "") -> Memory:
    return Memory(id=f"m{seq}", content=f"memory {seq}", type=kind, importance=importance,
                  created_at=0, updated_at=0, last_accessed_at=0, access_count=0, source="",
                  channel_id=channel, agent_id=agent, forgotten=False, version=1, seq=seq,
                  user_id=user, channel_private=bool(channel))


def offered(live: LiveMemories, viewer: Viewer,
            types: list[MemoryType]) -> Accept:
    """The reference filter: each record's own ``offered_to`` and type."""
    def accept(labels: np.ndarray) -> np.ndarray:
        found = [live.get(int(label)) for label in labels]
        return np.array([m is not None and m.offered_to(viewer) and (not types or m.type in types)
                         for m in found], bool)
    return accept


class World:
    """One store seen by both implementations."""

    def __init__(self, rebuild_after: int = 4096) -> None:
        self.live = LiveMemories(capacity=8)
        self.fast = EdgeGraph(self.live, rebuild_after)
        self.ref = naive.EdgeGraph()

    def put(self, memories: list[Memory]) -> None:
        self.live.put(memories)
        self.fast.memories_stored(memories)

    def forget(self, memories: list[Memory]) -> None:
        self.live.drop(memories)
        self.fast.memories_forgotten(memories)

    def edges(self, added: list[Edge], removed: list[Edge]) -> None:
        self.fast.changed(added, removed)
        self.ref.changed(added, removed)

    def check(self, found: list[list[int]], threshold: float, seed_limit: int, agent: Viewer,
              types: list[MemoryType], multipliers: dict[Relation, float], depth: int,
              limit: int) -> int:
        seqs, scores = self.fast.expand(
            tuple(np.array(f, np.int64) for f in found), threshold, seed_limit,
            self.live.visibility(agent, types), relation_factors(multipliers), depth, limit)
        seeds = naive.graph_seeds(found, self.live.importance, threshold, seed_limit)
        ref_seqs, ref_scores = self.ref.expand(seeds, self.live, offered(self.live, agent, types),
                                               multipliers, depth, limit)
        assert seqs.tolist() == ref_seqs
        assert scores.tolist() == ref_scores  # the same products in the same order: exact
        return len(ref_seqs)


def random_memories(rng: np.random.Generator, seqs: range) -> list[Memory]:
    out = []
    for s in seqs:
        user = str(rng.choice(USERS))
        channel = "c1" if not user and rng.random() < 0.15 else ""
        out.append(mem(s, float(rng.choice([0.0, 0.3, 0.5, 0.5, 0.8, 1.0])),
                       str(rng.choice(AGENTS)), TYPES[int(rng.integers(len(TYPES)))], user,
                       channel))
    return out


def random_edges(rng: np.random.Generator, ids: list[str], n: int) -> list[Edge]:
    edges = []
    for _ in range(n):
        a, b = rng.choice(len(ids), 2, replace=False)
        edges.append(Edge(ids[a], ids[b], Relation(int(rng.integers(1, 7))),
                          float(rng.choice([0.25, 0.5, 0.5, 1.0]))))
    return edges


def random_query(rng: np.random.Generator, n: int) -> tuple[
        list[list[int]], float, int, Viewer, list[MemoryType], dict[Relation, float], int, int]:
    found = [rng.integers(0, n + 3, int(rng.integers(0, 6))).tolist()  # some not stored
             for _ in range(int(rng.integers(1, 4)))]
    types = [] if rng.random() < 0.6 else list(rng.choice(TYPES, 2))  # type: ignore[arg-type]
    multipliers = {r: float(rng.choice([0.0, 0.5, 1.0, 1.5, 2.0]))
                   for r in Relation if rng.random() < 0.8}
    return (found, float(rng.choice([0.0, 0.5, 0.8])), int(rng.choice([1, 3, 20])),
            VIEWERS[int(rng.integers(len(VIEWERS)))], types, multipliers, int(rng.integers(1, 4)),
            int(rng.integers(1, 30)))


@pytest.mark.parametrize("rebuild_after", [0, 5, 4096])
@pytest.mark.parametrize("seed", range(8))
def test_random_graphs_match_reference(seed: int, rebuild_after: int) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(5, 60))
    world = World(rebuild_after)
    world.put(random_memories(rng, range(1, n + 1)))
    ids = [f"m{s}" for s in range(1, n + 6)]  # m{n+1}.. stored later
    edges = random_edges(rng, ids, int(rng.integers(n // 2, 3 * n)))
    world.edges(edges, [])
    found = 0
    for round_ in range(8):
        for _ in range(6):
            found += world.check(*random_query(rng, n))
        if round_ == 2:  # the late memories arrive after their edges
            world.put(random_memories(rng, range(n + 1, n + 6)))
        forgotten = [mem(int(s), 0.5) for s in rng.integers(1, n + 1, 2)]
        world.forget(forgotten)
        if round_ == 5:  # ... and some come back
            world.put(random_memories(rng, [m.seq for m in forgotten]))
        removed = [edges[int(i)] for i in rng.integers(0, len(edges), 3)]
        world.edges(random_edges(rng, ids, 4), removed)
    assert found > 0


def test_ties_break_by_seq_and_limit_cuts_after_ordering() -> None:
    world = World()
    world.put([mem(s, 0.5) for s in range(1, 8)])
    world.edges([Edge("m1", f"m{s}", Relation.RELATED_TO, 0.5) for s in (6, 3, 5, 2, 7)], [])
    assert world.check([[1]], 0.0, 1, Viewer(), [], {}, 1, 3) == 3
    seqs, scores = world.fast.expand((np.array([1]),), 0.0, 1, world.live.visibility(Viewer()),
                                     relation_factors({}), 1, 3)
    assert seqs.tolist() == [2, 3, 5] and scores.tolist() == [0.25] * 3


def test_reverse_edge_is_one_link_of_the_last_weight() -> None:
    world = World()
    world.put([mem(1, 1.0), mem(2, 1.0)])
    world.edges([Edge("m1", "m2", Relation.UPDATES, 0.25),
                 Edge("m2", "m1", Relation.UPDATES, 1.0)], [])
    assert len(world.fast) == 1
    got = world.fast.expand((np.array([1]),), 0.0, 1, world.live.visibility(Viewer()),
                            relation_factors({}), 1, 5)
    assert got[1].tolist() == [1.0]
    world.edges([], [Edge("m1", "m2", Relation.UPDATES)])  # removes the link both ways
    assert len(world.fast) == 0 and world.check([[1]], 0.0, 1, Viewer(), [], {}, 2, 5) == 0


def test_seed_with_best_rank_first_then_label() -> None:
    importance = np.array([0.0, 0.9, 0.9, 0.2, 0.9, 0.9])
    found = [[4, 2, 3, 5, 9], [1, 4], [], [5, 2]]  # 9: beyond the column, never a seed
    arrays = tuple(np.array(f, np.int64) for f in found)
    for threshold in (0.0, 0.5, 1.0):
        for limit in (0, 1, 3, 10):
            got = graph_walk.seeds(arrays, importance, threshold, limit).tolist()
            assert got == naive.graph_seeds(found, importance, threshold, limit)
    assert graph_walk.seeds(arrays, importance, 0.5, 10).tolist() == [1, 4, 5, 2]
    assert graph_walk.seeds((), importance, 0.5, 10).tolist() == []


@pytest.mark.parametrize("seed", range(6))
def test_random_seeds_match_reference(seed: int) -> None:
    rng = np.random.default_rng(seed)
    importance = rng.choice([0.2, 0.8, 0.9], 50)
    found = [rng.permutation(50)[: int(rng.integers(0, 30))].tolist() for _ in range(3)]
    limit = int(rng.integers(1, 25))
    got = graph_walk.seeds(tuple(np.array(f, np.int64) for f in found), importance, 0.8, limit)
    assert got.tolist() == naive.graph_seeds(found, importance, 0.8, limit)


def test_adjacency_lists_both_directions_once_per_self_edge() -> None:
    adj = graph_walk.adjacency(np.array([[0, 2], [1, 1], [2, 1]]), np.array([1, 2, 3]),
                               np.array([0.5, 0.25, 1.0]), 4)
    entries = {node: sorted(zip(adj.nbr[adj.indptr[node]:adj.indptr[node + 1]].tolist(),
                                adj.rel[adj.indptr[node]:adj.indptr[node + 1]].tolist(),
                                adj.weight[adj.indptr[node]:adj.indptr[node + 1]].tolist(),
                                strict=True))
               for node in range(4)}
    assert entries == {0: [(2, 1, 0.5)], 1: [(1, 2, 0.25), (2, 3, 1.0)],
                       2: [(0, 1, 0.5), (1, 3, 1.0)], 3: []}
    with pytest.raises(ValueError, match="one row per edge"):
        graph_walk.adjacency(np.array([[0, 1]]), np.array([1, 2]), np.array([0.5]), 2)
    with pytest.raises(ValueError, match="nodes in"):
        graph_walk.adjacency(np.array([[0, 2]]), np.array([1]), np.array([0.5]), 2)


def test_unlink_masks_both_directions_of_one_relation() -> None:
    adj = graph_walk.adjacency(np.array([[0, 1], [0, 1], [1, 2]]), np.array([1, 2, 1]),
                               np.array([0.5, 0.5, 0.5]), 3)
    graph_walk.unlink(adj, 1, 0, 1)
    alive = {(node, int(adj.nbr[j]), int(adj.rel[j]))
             for node in range(3) for j in range(adj.indptr[node], adj.indptr[node + 1])
             if adj.weight[j] >= 0}
    assert alive == {(0, 1, 2), (1, 0, 2), (1, 2, 1), (2, 1, 1)}


def test_walk_checks_its_inputs() -> None:
    adj = graph_walk.adjacency(np.array([[0, 1]]), np.array([1]), np.array([0.5]), 2)
    none = graph_walk.adjacency(np.zeros((0, 2)), np.zeros(0), np.zeros(0), 2)
    vis = (np.ones(3, bool), np.zeros(3, np.int32), -1, np.zeros(3, np.int8),
           np.zeros(0, np.int8), np.zeros(3, np.int32), np.zeros(0, np.int32))
    space = graph_walk.scratch(2)
    found = (np.array([1]),)
    args = (np.array([1, 2]), np.array([-1, 0, 1]), found, 0.0, 5, np.ones(7), vis, np.ones(3))
    for pair in ((adj, none), (none, adj)):
        seqs, scores = graph_walk.walk(pair, space, *args, 2, 10, 1 + len(pair[0].nbr))
        assert seqs.tolist() == [2] and scores.tolist() == [0.5]
    assert graph_walk.walk((adj, none), space, *args[:2], (), *args[3:], 2, 10, 3)[0].size == 0
    with pytest.raises(ValueError, match="stamp"):
        graph_walk.walk((adj, none), space, *args, 2, 10, 0)
    with pytest.raises(ValueError, match="n nodes"):
        graph_walk.walk((adj, none), space, np.array([1]), *args[1:], 2, 10, 4)
    with pytest.raises(ValueError, match="n nodes"):
        graph_walk.walk((adj, none), graph_walk.scratch(3), *args, 2, 10, 5)
