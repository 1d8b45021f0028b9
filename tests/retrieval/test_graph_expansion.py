from __future__ import annotations

import threading

import numpy as np
import pytest

from sidecar.app import App
from sidecar.records import Edge, Memory, MemoryDraft, MemoryType, Relation, Viewer
from sidecar.retrieval.config import RetrievalConfig
from sidecar.retrieval.graph.expansion import EdgeGraph, relation_factors
from sidecar.retrieval.hybrid import HybridRetriever
from sidecar.retrieval.mirror import LiveMemories
from tests import naive
from tests.retrieval.test_concurrency import run_together

MULT = RetrievalConfig().multipliers
FACTORS = relation_factors(MULT)


def seeded(seeds: list[int]) -> tuple[np.ndarray, ...]:
    return (np.array(seeds, np.int64),)


def reach(world: tuple[LiveMemories, EdgeGraph], seeds: list[int], agent: str, max_depth: int,
          limit: int) -> tuple[np.ndarray, np.ndarray]:
    live, graph = world
    return graph.expand(seeded(seeds), 0.0, 100, live.visibility(Viewer(agent)), FACTORS, max_depth,
                        limit)


def mem(seq: int, importance: float, agent: str = "") -> Memory:
    return Memory(id=f"m{seq}", content=f"memory {seq}", type=MemoryType.FACT,
                  importance=importance, created_at=0, updated_at=0, last_accessed_at=0,
                  access_count=0, source="", channel_id="", agent_id=agent, forgotten=False,
                  version=1, seq=seq)


@pytest.fixture
def world() -> tuple[LiveMemories, EdgeGraph]:
    live = LiveMemories()
    live.put([mem(1, 0.9), mem(2, 0.6), mem(3, 0.4), mem(4, 1.0), mem(5, 0.5, agent="bob"),
              mem(6, 0.7)])
    graph = EdgeGraph(live)
    graph.changed([
        Edge("m1", "m2", Relation.UPDATES, 0.5),     # 0.6 * 0.5 * 1.5 = 0.45
        Edge("m3", "m1", Relation.CAUSED_BY, 1.0),   # reverse direction walks too: 0.4 * 1.3
        Edge("m2", "m4", Relation.PART_OF, 0.5),     # depth 2: 1.0 * (0.75) * 0.5 * 0.8 = 0.3
        Edge("m1", "m5", Relation.RELATED_TO, 1.0),  # bob's: hidden from a shared-only query
        Edge("m4", "m6", Relation.CONTRADICTS, 1.0),  # depth 3: beyond max depth 2
    ], [])
    return live, graph


def test_scores_depth_and_order(world: tuple[LiveMemories, EdgeGraph]) -> None:
    seqs, scores = reach(world, [1], "", 2, 10)
    expected = {3: 0.4 * 1.3, 2: 0.6 * 0.5 * 1.5, 4: 1.0 * (0.5 * 1.5) * (0.5 * 0.8)}
    assert seqs.tolist() == sorted(expected, key=lambda s: -expected[s])
    np.testing.assert_allclose(scores, [expected[s] for s in seqs.tolist()])


def test_scope_depth_limit_and_seed_exclusion(world: tuple[LiveMemories, EdgeGraph]) -> None:
    bob = reach(world, [1], "bob", 1, 10)[0].tolist()
    assert 5 in bob and 4 not in bob  # bob sees his memory; depth 1 stops before m4
    both = reach(world, [1, 2], "", 2, 10)[0].tolist()
    assert sorted(both) == [3, 4, 6]  # seeds 1 and 2 are not returned; bob's 5 is hidden
    bobs = reach(world, [1, 2], "bob", 2, 10)[0]
    assert sorted(bobs.tolist()) == [3, 4, 5, 6]
    assert reach(world, [1], "", 2, 1)[0].tolist() == [3]


def test_sync_and_forgotten(world: tuple[LiveMemories, EdgeGraph]) -> None:
    live, graph = world
    graph.changed([], [Edge("m3", "m1", Relation.CAUSED_BY, 1.0)])
    assert 3 not in reach(world, [1], "", 2, 10)[0].tolist()
    live.drop([mem(2, 0.6)])  # forgotten: neither listed nor walked through
    graph.memories_forgotten([mem(2, 0.6)])
    assert reach(world, [1], "", 2, 10)[0].tolist() == []



def test_sources_into_follows_direction_relation_and_removal() -> None:
    graph = EdgeGraph(LiveMemories())
    updates, related = Relation.UPDATES, Relation.RELATED_TO
    graph.changed([Edge("b", "a", updates, 1.0), Edge("c", "a", related, 1.0),
                   Edge("a", "d", updates, 1.0), Edge("e", "b", updates, 1.0)], ())
    wanted = {Relation.UPDATES, Relation.CONTRADICTS}
    assert sorted(graph.sources_into(["a", "b", "d"], wanted)) == [("a", "d"), ("b", "a"),
                                                                    ("e", "b")]
    assert graph.sources_into(["b"], {related}) == []  # b -> a is not into b
    graph.changed([], [Edge("b", "a", updates, 1.0)])
    assert graph.sources_into(["a"], wanted) == []


WORDS = ("billing", "garden", "deploy", "tokens", "tomatoes", "postgres", "standup", "invoice",
         "kernel", "lunch", "oscar", "tabs", "refresh", "clock", "february", "basil")


def test_real_store_matches_reference(app: App) -> None:
    """Agent-scoped and forgotten memories, an edited one, edges added and removed: the graph
    of the running retriever and of a fresh load expand as the dict reference does."""
    svc, rng = app.memories, np.random.default_rng(7)
    stored: list[tuple[str, str]] = []  # (id, agent)
    for i in range(30):
        agent = str(rng.choice(["", "", "bob", "eve"]))
        words = " ".join(rng.choice(WORDS, 4, replace=False))
        draft = MemoryDraft(f"note {i}: {words}", MemoryType(int(rng.integers(1, 5))),
                            importance=float(rng.choice([0.3, 0.5, 0.8, 1.0])), agent_id=agent)
        stored.append((svc.upsert(draft).memory.id, agent))
    for _ in range(60):
        (a, agent), (b, other) = (stored[int(i)] for i in rng.choice(30, 2, replace=False))
        if a != b and (agent == other or "" in (agent, other)):
            svc.add_edge(a, b, Relation(int(rng.integers(1, 7))),
                         float(rng.choice([0.5, 1.0])), agent_id=agent or other)
    for memory_id, agent in stored[:4]:
        svc.forget(memory_id, agent_id=agent)
    memory_id, agent = stored[5]
    svc.upsert(MemoryDraft("note 5 edited: kernel basil", MemoryType.FACT, id=memory_id,
                           importance=0.9, agent_id=agent))
    owner = dict(stored)
    for e in svc.edges.all()[:3]:
        svc.remove_edge(e.source_id, e.target_id, e.relation,
                        agent_id=owner[e.source_id] or owner[e.target_id])
    ref = naive.EdgeGraph()
    ref.changed(svc.edges.all(), [])
    fresh = HybridRetriever(app.embedder, app.live.map(lambda c: c.retrieval))
    fresh.load(svc.memories, svc.edges)
    live, found = app.retriever.live, 0
    seqs = [m.seq for m in svc.memories.get_many([i for i, _ in stored]).values()]
    for agent in ("", "bob", "eve"):
        for depth in (1, 2, 3):
            seeds = [int(s) for s in rng.choice(seqs, 6, replace=False)]
            want = ref.expand(seeds, live, live.filter(Viewer(agent)), MULT, depth, 20)
            for graph in (app.retriever.graph, fresh.graph):
                got = graph.expand(seeded(seeds), 0.0, 6, graph.live.visibility(Viewer(agent)),
                                   FACTORS, depth, 20)
                assert (got[0].tolist(), got[1].tolist()) == want
            found += len(want[0])
    assert found > 0


def test_walks_racing_edge_and_memory_changes() -> None:
    """Edges added and removed, memories stored and forgotten while walks run: no errors, a
    memory forgotten before a walk never in it; afterwards, the reference's answer."""
    live, edges = LiveMemories(), naive.EdgeGraph()
    graph = EdgeGraph(live)
    first = [mem(s, 0.9) for s in range(1, 201)]
    live.put(first)
    forgotten: set[int] = set()
    errors: list[BaseException] = []
    stop = threading.Event()

    def writer() -> None:
        rng = np.random.default_rng(1)
        try:
            for step in range(400):
                new = mem(201 + step, 0.9)
                live.put([new])
                graph.memories_stored([new])
                a, b = rng.choice(200 + step, 2, replace=False) + 1
                added = [Edge(f"m{a}", f"m{b}", Relation(int(rng.integers(1, 7))), 0.5),
                         Edge(f"m{b}", new.id, Relation.RELATED_TO, 1.0)]
                removed = [Edge(f"m{a + 1}", f"m{b}", Relation.RELATED_TO)]
                graph.changed(added, removed)
                edges.changed(added, removed)
                if step % 4 == 0:
                    victim = first[step // 4]
                    live.drop([victim])
                    graph.memories_forgotten([victim])
                    forgotten.add(victim.seq)
        except BaseException as err:  # noqa: BLE001
            errors.append(err)
        finally:
            stop.set()

    def reader(seed: int) -> None:
        rng = np.random.default_rng(seed)
        try:
            while not stop.is_set():
                gone = set(forgotten)
                seeds = rng.integers(1, 200, 5).tolist()
                seqs, scores = reach((live, graph), seeds, "", 3, 50)
                assert not gone & set(seqs.tolist())
                assert np.all(np.isfinite(scores)) and np.all(np.diff(scores) <= 0)
        except BaseException as err:  # noqa: BLE001
            errors.append(err)

    run_together(writer, reader, (2, 3))
    assert not errors, errors[0]
    for seeds in ([5, 60], [150, 250], list(range(100, 120)), list(range(300, 600, 7))):
        want = edges.expand(seeds, live, live.filter(Viewer()), MULT, 3, 50)
        got = reach((live, graph), seeds, "", 3, 50)
        assert (got[0].tolist(), got[1].tolist()) == want
        assert want[0] or seeds == [5, 60]  # m1..m100 are forgotten


def test_a_reserved_graph_binds_high_seqs_in_place_with_the_same_walks() -> None:
    """``reserve`` sizes the seq -> node column once: memories stored later up to that seq
    bind without a new column, and the walks are those of a graph that grew."""
    worlds = []
    for reserved in (0, 5000):
        live = LiveMemories()
        graph = EdgeGraph(live)
        graph.reserve(reserved)
        column = graph._seq_node
        live.put([mem(1, 0.9), mem(4000, 0.6), mem(4999, 0.8)])
        graph.changed([Edge("m1", "m4000", Relation.UPDATES, 0.5),
                       Edge("m4000", "m4999", Relation.RELATED_TO, 1.0)], [])
        assert (graph._seq_node is column) == bool(reserved)
        worlds.append(reach((live, graph), [1], "", 2, 10))
    for a, b in zip(*worlds, strict=True):
        np.testing.assert_array_equal(a, b)
    assert sorted(worlds[0][0].tolist()) == [4000, 4999]
