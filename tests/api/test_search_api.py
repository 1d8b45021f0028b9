"""Search over real gRPC with the generated stub: modes, scope, filters, graph, validation."""

from __future__ import annotations

import grpc
import pytest
from memsidecar.v1 import memory_pb2 as m
from memsidecar.v1 import store_pb2 as s

from sidecar.retrieval import stages
from tests.conftest import Running

NOTES = [
    ("We chose JWT over session tokens for the API", m.MEMORY_TYPE_DECISION, ""),
    ("The auth module lives in src/auth with three files", m.MEMORY_TYPE_FACT, ""),
    ("Grandma grows tomatoes and basil in her garden", m.MEMORY_TYPE_FACT, ""),
    ("Deploys happen every Tuesday after the standup", m.MEMORY_TYPE_EVENT, ""),
    ("Alice's private API key is stored in the vault", m.MEMORY_TYPE_FACT, "alice"),
    ("Token refresh fails when the clock skews", m.MEMORY_TYPE_OBSERVATION, ""),
]


@pytest.fixture
def stored(running: Running) -> dict[str, m.Memory]:
    out = {}
    for content, type_, agent in NOTES:
        reply = running.store.UpsertMemory(s.UpsertMemoryRequest(memory=m.Memory(
            content=content, type=type_, agent_id=agent)))
        out[content.split()[0]] = reply.memory
    return out


def search(live: Running, query: str, **kw: object) -> s.SearchResponse:
    return live.store.Search(s.SearchRequest(query=query, **kw))  # type: ignore[arg-type]


def test_hybrid_search_with_explanation_and_debug(running: Running,
                                                 stored: dict[str, m.Memory]) -> None:
    reply = search(running, "which tokens does the API use?", limit=3, debug=True)
    top = reply.hits[0]
    assert top.memory.id == stored["We"].id
    assert top.vector_rank >= 1 and top.lexical_rank >= 1 and top.graph_rank == 0
    assert 0.0 < top.cosine <= 1.0 and top.score > 0
    assert len(reply.hits) == 3
    d = reply.debug
    assert d.total_us >= d.vector_us + d.lexical_us and d.embed_us > 0
    assert not search(running, "tokens", limit=3).HasField("debug")


def test_hits_explain_every_source_by_name_and_the_old_fields_agree(
        running: Running, stored: dict[str, m.Memory]) -> None:
    for mode in (s.SEARCH_MODE_HYBRID, s.SEARCH_MODE_VECTOR, s.SEARCH_MODE_LEXICAL):
        for hit in search(running, "which tokens does the API use?", limit=5, mode=mode).hits:
            ranks = {r.name: r.rank for r in hit.sources}
            assert [r.name for r in hit.sources] == ["vector", "lexical", "graph"]
            assert all(r.weight > 0 for r in hit.sources)
            assert (ranks["vector"], ranks["lexical"], ranks["graph"]) == (
                hit.vector_rank, hit.lexical_rank, hit.graph_rank)


def test_debug_carries_every_stage_the_engine_timed(running: Running,
                                                   stored: dict[str, m.Memory]) -> None:
    assert all(f"{name}_us" in s.StageTimings.DESCRIPTOR.fields_by_name for name in stages.ALL)
    d = search(running, "which tokens does the API use?", limit=3, debug=True).debug
    assert set(d.stages_us) >= {stages.EMBED, stages.GRAPH, stages.FUSION, stages.HITS,
                                stages.TOTAL}
    for name, us in d.stages_us.items():
        assert getattr(d, f"{name}_us") == us


def test_modes(running: Running, stored: dict[str, m.Memory]) -> None:
    vec = search(running, "garden vegetables", mode=s.SEARCH_MODE_VECTOR).hits
    lex = search(running, "garden vegetables", mode=s.SEARCH_MODE_LEXICAL).hits
    assert vec[0].memory.id == stored["Grandma"].id
    assert all(h.lexical_rank == 0 and h.vector_rank > 0 for h in vec)
    assert [h.memory.id for h in lex] == [stored["Grandma"].id]  # only the word "garden" hits
    assert lex[0].lexical_rank == 1 and lex[0].vector_rank == 0 and lex[0].cosine > 0.2


def test_scope_type_filter_and_forgotten(running: Running, stored: dict[str, m.Memory]) -> None:
    key = stored["Alice's"].id
    assert key not in {h.memory.id for h in search(running, "private API key vault").hits}
    assert key in {h.memory.id for h in search(running, "private API key vault",
                                                agent_id="alice").hits}
    facts = search(running, "API", types=[m.MEMORY_TYPE_FACT], agent_id="alice", limit=20).hits
    assert facts and all(h.memory.type == m.MEMORY_TYPE_FACT for h in facts)
    running.store.ForgetMemory(s.ForgetMemoryRequest(id=stored["We"].id))
    for mode in (s.SEARCH_MODE_HYBRID, s.SEARCH_MODE_VECTOR, s.SEARCH_MODE_LEXICAL):
        hits = search(running, "JWT session tokens API", mode=mode, limit=50).hits
        assert stored["We"].id not in {h.memory.id for h in hits}


def test_graph_expansion_over_edges(running: Running, stored: dict[str, m.Memory]) -> None:
    seed, linked = stored["We"], stored["Deploys"]
    query = dict(limit=10, search_limit=1)
    assert linked.id not in {h.memory.id for h in search(running, "JWT", **query).hits}
    running.store.AddEdge(s.AddEdgeRequest(edge=m.Edge(
        source_id=seed.id, target_id=linked.id, relation=m.RELATION_RESULT_OF, weight=1.0)))
    hits = {h.memory.id: h for h in search(running, "JWT", **query).hits}
    assert hits[linked.id].graph_rank == 1
    assert hits[linked.id].vector_rank == 0 and hits[linked.id].lexical_rank == 0


def status_of(call: object) -> grpc.RpcError:
    with pytest.raises(grpc.RpcError) as info:
        call()  # type: ignore[operator]
    return info.value


@pytest.mark.parametrize("request_,field", [
    (s.SearchRequest(query=""), "query"),
    (s.SearchRequest(query="  \n"), "query"),
    (s.SearchRequest(query="x", limit=1001), "limit"),
    (s.SearchRequest(query="x", search_limit=5000), "search_limit"),
    (s.SearchRequest(query="x", mode=42), "mode"),  # type: ignore[arg-type]
    (s.SearchRequest(query="x", types=[m.MEMORY_TYPE_FACT, 99]), "types"),  # type: ignore[list-item]
    (s.SearchRequest(query="x", types=[m.MEMORY_TYPE_UNSPECIFIED]), "types"),
])
def test_validation_errors_name_the_field(running: Running, request_: s.SearchRequest,
                                          field: str) -> None:
    err = status_of(lambda: running.store.Search(request_))
    assert err.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert field in err.details()
    assert ("memsidecar-field", field) in tuple(err.trailing_metadata())


def test_empty_store_returns_no_hits(running: Running) -> None:
    assert list(search(running, "anything at all").hits) == []


def test_default_search_limit_follows_a_larger_limit(running: Running) -> None:
    for i in range(30):
        running.store.UpsertMemory(s.UpsertMemoryRequest(memory=m.Memory(
            content=f"note {i} about the weekly planning meeting", type=m.MEMORY_TYPE_FACT)))
    vec = search(running, "planning meeting", limit=25, mode=s.SEARCH_MODE_VECTOR).hits
    assert len(vec) == 25  # search_limit 0 = max(configured 20, limit)
    few = search(running, "planning meeting", limit=25, search_limit=5,
                 mode=s.SEARCH_MODE_VECTOR).hits
    assert len(few) == 5
