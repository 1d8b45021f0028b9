from __future__ import annotations

import numpy as np
import pytest

from sidecar.records import Edge, Memory, MemoryType, Relation
from sidecar.retrieval.config import RetrievalConfig
from sidecar.retrieval.graph.expansion import EdgeGraph
from sidecar.retrieval.mirror import LiveMemories

MULT = RetrievalConfig().multipliers


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
    graph = EdgeGraph()
    graph.changed([
        Edge("m1", "m2", Relation.UPDATES, 0.5),     # 0.6 * 0.5 * 1.5 = 0.45
        Edge("m3", "m1", Relation.CAUSED_BY, 1.0),   # reverse direction walks too: 0.4 * 1.3
        Edge("m2", "m4", Relation.PART_OF, 0.5),     # depth 2: 1.0 * (0.75) * 0.5 * 0.8 = 0.3
        Edge("m1", "m5", Relation.RELATED_TO, 1.0),  # bob's: hidden from a shared-only query
        Edge("m4", "m6", Relation.CONTRADICTS, 1.0),  # depth 3: beyond max depth 2
    ], [])
    return live, graph


def test_scores_depth_and_order(world: tuple[LiveMemories, EdgeGraph]) -> None:
    live, graph = world
    seqs, scores = graph.expand([1], live, live.filter(""), MULT, max_depth=2, limit=10)
    expected = {3: 0.4 * 1.3, 2: 0.6 * 0.5 * 1.5, 4: 1.0 * (0.5 * 1.5) * (0.5 * 0.8)}
    assert seqs.tolist() == sorted(expected, key=lambda s: -expected[s])
    np.testing.assert_allclose(scores, [expected[s] for s in seqs.tolist()])


def test_scope_depth_limit_and_seed_exclusion(world: tuple[LiveMemories, EdgeGraph]) -> None:
    live, graph = world
    bob = graph.expand([1], live, live.filter("bob"), MULT, max_depth=1, limit=10)[0].tolist()
    assert 5 in bob and 4 not in bob  # bob sees his memory; depth 1 stops before m4
    both = graph.expand([1, 2], live, live.filter(""), MULT, max_depth=2, limit=10)[0].tolist()
    assert sorted(both) == [3, 4, 6]  # seeds 1 and 2 are not returned; bob's 5 is hidden
    bobs = graph.expand([1, 2], live, live.filter("bob"), MULT, max_depth=2, limit=10)[0]
    assert sorted(bobs.tolist()) == [3, 4, 5, 6]
    assert graph.expand([1], live, live.filter(""), MULT, max_depth=2, limit=1)[0].tolist() == [3]


def test_sync_and_forgotten(world: tuple[LiveMemories, EdgeGraph]) -> None:
    live, graph = world
    graph.changed([], [Edge("m3", "m1", Relation.CAUSED_BY, 1.0)])
    assert 3 not in graph.expand([1], live, live.filter(""), MULT, 2, 10)[0].tolist()
    live.drop([mem(2, 0.6)])  # forgotten: neither listed nor walked through
    assert graph.expand([1], live, live.filter(""), MULT, 2, 10)[0].tolist() == []



def test_sources_into_follows_direction_relation_and_removal() -> None:
    graph = EdgeGraph()
    updates, related = Relation.UPDATES, Relation.RELATED_TO
    graph.changed([Edge("b", "a", updates, 1.0), Edge("c", "a", related, 1.0),
                   Edge("a", "d", updates, 1.0), Edge("e", "b", updates, 1.0)], ())
    wanted = {Relation.UPDATES, Relation.CONTRADICTS}
    assert sorted(graph.sources_into(["a", "b", "d"], wanted)) == [("a", "d"), ("b", "a"),
                                                                    ("e", "b")]
    assert graph.sources_into(["b"], {related}) == []  # b -> a is not into b
    graph.changed([], [Edge("b", "a", updates, 1.0)])
    assert graph.sources_into(["a"], wanted) == []
