from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np
import pytest

from sidecar.app import App
from sidecar.embedding import Embedder
from sidecar.live import Live
from sidecar.records import MemoryDraft, MemoryType, Relation, Viewer
from sidecar.retrieval.config import RetrievalConfig
from sidecar.retrieval.contract import Mode, SearchQuery
from sidecar.retrieval.hybrid import HybridRetriever
from sidecar.store.memories import ListQuery

FACTS = [
    ("We chose JWT over session tokens for the API", MemoryType.DECISION),
    ("The auth module lives in src/auth with three files", MemoryType.FACT),
    ("Grandma grows tomatoes and basil in her garden", MemoryType.FACT),
    ("Deploys happen every Tuesday after the standup", MemoryType.EVENT),
    ("Oscar prefers tabs over spaces in Go code", MemoryType.PREFERENCE),
    ("Token refresh fails when the clock skews by more than a minute", MemoryType.OBSERVATION),
    ("Ship version two by the end of February", MemoryType.GOAL),
]


@pytest.fixture
def filled(app: App) -> App:
    for text, kind in FACTS:
        app.memories.upsert(MemoryDraft(text, kind))
    return app


def ids(app: App, q: SearchQuery) -> list[str]:
    return [h.memory.id for h in app.retriever.search(q).hits]


def contents(app: App, q: SearchQuery) -> list[str]:
    return [h.memory.content for h in app.retriever.search(q).hits]


def test_hybrid_finds_and_explains(filled: App) -> None:
    result = filled.retriever.search(SearchQuery("JWT tokens for the API", limit=3))
    top = result.hits[0]
    assert top.memory.content.startswith("We chose JWT")
    assert top.rank("vector") >= 1 and top.rank("lexical") >= 1
    assert top.cosine == pytest.approx(float(result.query_embedding @ filled.embedder.embed_one(
        top.memory.content)), abs=1e-4)
    assert [h.score for h in result.hits] == sorted((h.score for h in result.hits), reverse=True)
    assert {"embed", "vector", "lexical", "graph", "fusion", "hits", "total"} <= set(
        result.timings_us)


def test_modes_use_only_their_source_and_ranks_agree(filled: App) -> None:
    q = SearchQuery("token refresh and auth", limit=7, search_limit=7)
    vec = filled.retriever.search(replace(q, mode=Mode.VECTOR)).hits
    lex = filled.retriever.search(replace(q, mode=Mode.LEXICAL)).hits
    hyb = filled.retriever.search(q).hits
    assert all(h.rank("lexical") == 0 and h.rank("graph") == 0 for h in vec)
    assert all(h.rank("vector") == 0 and h.rank("graph") == 0 for h in lex)
    vec_rank = {h.memory.id: h.rank("vector") for h in vec}
    lex_rank = {h.memory.id: h.rank("lexical") for h in lex}
    for h in hyb:
        assert h.rank("vector") == vec_rank.get(h.memory.id, 0)
        assert h.rank("lexical") == lex_rank.get(h.memory.id, 0)
    cos = [h.cosine for h in sorted(vec, key=lambda h: h.rank("vector"))]
    assert cos == sorted(cos, reverse=True)
    assert all(h.cosine == h.cosine for h in lex)  # every hit carries its cosine (not nan)


def test_search_limit_bounds_each_source(filled: App) -> None:
    q = SearchQuery("auth tokens garden tuesday", limit=50, search_limit=2)
    assert len(filled.retriever.search(replace(q, mode=Mode.VECTOR)).hits) == 2
    assert len(filled.retriever.search(replace(q, mode=Mode.LEXICAL)).hits) == 2
    hits = filled.retriever.search(q).hits
    assert 2 <= len(hits) <= 4
    assert all(h.rank("vector") <= 2 and h.rank("lexical") <= 2 for h in hits)


def test_scope_and_type_filter(filled: App) -> None:
    svc = filled.memories
    private = svc.upsert(MemoryDraft("Bob keeps the garden shed key under the mat",
                                     MemoryType.FACT, agent_id="bob")).memory
    for mode in Mode:
        q = SearchQuery("garden shed key", limit=20, mode=mode)
        assert private.id not in ids(filled, q)
        assert private.id not in ids(filled, replace(q, agent_id="alice"))
        assert private.id in ids(filled, replace(q, agent_id="bob"))
        typed = filled.retriever.search(replace(q, types=(MemoryType.FACT,))).hits
        assert typed and all(h.memory.type is MemoryType.FACT for h in typed)


def test_forgotten_and_updated_disappear_at_once(filled: App) -> None:
    svc = filled.memories
    target = svc.upsert(MemoryDraft("The staging database password rotates monthly",
                                    MemoryType.FACT)).memory
    q = SearchQuery("staging database password", limit=20)
    assert target.id in ids(filled, q)
    svc.upsert(MemoryDraft("Lunch is at noon on Fridays", MemoryType.FACT, id=target.id))
    lexical = filled.retriever.search(replace(q, mode=Mode.LEXICAL)).hits
    assert target.id not in {h.memory.id for h in lexical}
    svc.forget(target.id)
    for mode in Mode:
        assert target.id not in ids(filled, replace(q, mode=mode))
    assert filled.retriever.embedding_of(target.id) is None


def test_graph_expansion_brings_linked_memory(filled: App) -> None:
    svc = filled.memories
    seed = svc.upsert(MemoryDraft("Decision: migrate the billing service to Postgres",
                                  MemoryType.DECISION)).memory  # importance 0.8 = threshold
    linked = svc.upsert(MemoryDraft("Quarterly invoices were double-charged in March",
                                    MemoryType.EVENT)).memory
    q = SearchQuery("billing service Postgres migration", limit=20, search_limit=1)
    assert linked.id not in ids(filled, q)
    svc.add_edge(seed.id, linked.id, Relation.CAUSED_BY, 0.9)
    hits = {h.memory.id: h for h in filled.retriever.search(q).hits}
    assert hits[linked.id].rank("graph") == 1 and hits[linked.id].rank("vector") == 0
    vector_only = ids(filled, replace(q, mode=Mode.VECTOR))
    assert linked.id not in vector_only  # only HYBRID expands
    svc.remove_edge(seed.id, linked.id, Relation.CAUSED_BY)
    assert linked.id not in ids(filled, q)


def test_graph_seed_threshold_is_configurable(app: App) -> None:
    svc = app.memories
    seed = svc.upsert(MemoryDraft("Fact: the billing service runs on Postgres",
                                  MemoryType.FACT)).memory  # importance 0.6 < 0.8
    linked = svc.upsert(MemoryDraft("Quarterly invoices were double-charged",
                                    MemoryType.EVENT)).memory
    for i in range(5):
        svc.upsert(MemoryDraft(f"unrelated note number {i} about lunch", MemoryType.EVENT))
    svc.add_edge(seed.id, linked.id, Relation.RELATED_TO, 1.0)
    q = SearchQuery("billing service Postgres", limit=20, search_limit=1)
    assert linked.id not in ids(app, q)
    low = HybridRetriever(app.embedder, Live.fixed(RetrievalConfig(graph_seed_threshold=0.5)))
    low.load(svc.memories, svc.edges)
    hits = {h.memory.id: h for h in low.search(q).hits}
    assert hits[linked.id].rank("graph") == 1


def test_reload_from_store_gives_same_results(filled: App) -> None:
    svc = filled.memories
    svc.forget(svc.list(ListQuery(page_size=1))[0][0].id)
    fresh = HybridRetriever(filled.embedder, filled.live.map(lambda c: c.retrieval))
    fresh.load(svc.memories, svc.edges)
    for text in ("auth tokens", "garden", "February goal"):
        q = SearchQuery(text, limit=5)
        a = [(h.memory.id, h.ranks) for h in filled.retriever.search(q).hits]
        b = [(h.memory.id, h.ranks) for h in fresh.search(q).hits]
        assert a == b
    some = filled.retriever.search(SearchQuery("garden", limit=1)).hits[0].memory.id
    vec = fresh.embedding_of(some)
    assert vec is not None and np.isclose(np.linalg.norm(vec), 1.0, atol=1e-5)


def test_every_source_schedule_gives_the_same_hits(filled: App) -> None:
    """Lexical overlapped with the embedding, with the vector search, or run after it."""
    par = HybridRetriever(filled.embedder, Live.fixed(replace(
        filled.settings.current.retrieval, parallel_min_memories=0)))
    par.load(filled.memories.memories, filled.memories.edges)
    q = SearchQuery("auth tokens for the API", limit=5)
    embedded = filled.retriever.search(q)  # BM25 on the pool thread during the embedding
    assert {"embed", "vector", "lexical", "lexical_wait"} <= embedded.timings_us.keys()
    given = replace(q, embedding=embedded.query_embedding)
    serial = filled.retriever.search(given)  # below parallel_min_memories: one thread
    assert not {"lexical_wait", "sources"} & serial.timings_us.keys()
    parallel = par.search(given)
    assert "sources" in parallel.timings_us
    for result in (serial, parallel):
        assert [(h.memory.id, h.ranks) for h in result.hits] == [
            (h.memory.id, h.ranks) for h in embedded.hits]
        # the recency boost moves with the clock between the calls
        assert [h.score for h in result.hits] == pytest.approx(
            [h.score for h in embedded.hits], rel=1e-6)
        assert any(h.rank("lexical") for h in result.hits)
    # A long text is embedded on both cores: BM25 waits for the model, then runs beside the
    # vector search (from parallel_min_memories) or after it.
    long = replace(q, text="which auth tokens does the API accept and refresh? " * 12)
    assert filled.embedder.is_parallel(long.text)
    encoded = CountingTokenizer(filled.embedder)
    try:
        alone = filled.retriever.search(long)
    finally:
        encoded.restore()
    assert encoded.calls == [[long.text]]  # tokenised once, for the decision and the model
    beside = par.search(long)
    assert not {"lexical_wait", "sources"} & alone.timings_us.keys()
    assert "sources" in beside.timings_us
    assert [h.memory.id for h in alone.hits] == [h.memory.id for h in beside.hits]
    assert any(h.rank("lexical") for h in alone.hits)
    par.close()


class CountingTokenizer:
    """Stands in for an embedder's tokenizer and records the texts it encodes."""

    def __init__(self, embedder: Embedder) -> None:
        self.embedder, self.inner = embedder, embedder._tokenizer
        self.calls: list[list[str]] = []
        embedder._tokenizer = self  # type: ignore[assignment]

    def encode_batch(self, texts: list[str]) -> Any:
        self.calls.append(list(texts))
        return self.inner.encode_batch(texts)

    def encode(self, text: str) -> Any:
        self.calls.append([text])
        return self.inner.encode(text)

    def restore(self) -> None:
        self.embedder._tokenizer = self.inner


def test_query_max_tokens_cuts_what_is_embedded_not_what_bm25_sees(filled: App) -> None:
    cut = HybridRetriever(filled.embedder, Live.fixed(replace(
        filled.settings.current.retrieval, query_max_tokens=16)))
    cut.load(filled.memories.memories, filled.memories.edges)
    text = "tell me about the weather and the news and the traffic today please " * 2 + (
        "grandma tomatoes")
    assert filled.embedder.count_tokens(text) + 2 > 16
    result = cut.search(SearchQuery(text, limit=3))
    np.testing.assert_allclose(result.query_embedding, filled.embedder.embed_query(text, 16),
                               atol=1e-6)
    np.testing.assert_allclose(cut.embed_query(text), result.query_embedding, atol=1e-6)
    assert not np.allclose(result.query_embedding, filled.embedder.embed_one(text), atol=1e-3)
    top = result.hits[0]  # the words past the cut still reach BM25
    assert "tomatoes" in top.memory.content and top.rank("lexical") == 1
    cut.close()


def test_a_search_with_a_context_returns_every_bm25_score(filled: App) -> None:
    """``SearchResult.lexical``: the context search's BM25 of every accepted label (labels
    ascending), as ``with_context`` scores them; none without a context."""
    engine = filled.retriever
    q = SearchQuery("which tokens?", limit=5,
                    context_texts=(("the auth module and its files", 1.0), ("deploys", 0.5)))
    got = engine.search(q).lexical
    assert got is not None and len(got[0]) > 1
    labels, scores = got
    assert bool(np.all(labels[1:] > labels[:-1]))
    own = engine.lexical.scores(q.text)
    want_labels, want_scores = engine.lexical.with_context(own, q.context_texts)
    order = np.argsort(want_labels)
    np.testing.assert_array_equal(labels, want_labels[order])
    np.testing.assert_allclose(scores, want_scores[order])
    assert engine.search(replace(q, context_texts=())).lexical is None


def test_a_neighbourhood_holds_the_live_visible_writes_of_the_same_writer_near_by(
        app: App) -> None:
    """``neighbourhood``: each memory within ``radius`` places of one asked for in its
    writer's (agent, end user, source, channel) own sequence, live and visible to the agent,
    once, in store order: another writer's memories in between and forgotten ones take no place."""
    def put(text: str, **fields: str) -> str:
        return app.memories.upsert(MemoryDraft(text, MemoryType.FACT, **fields)).memory.id

    a = [put(f"Chapter note {i} of the river story.", source="book") for i in range(6)]
    other = put("A team fact written between the notes.", source="team")
    b = [put(f"Chapter note {i} of the river story.", source="book") for i in range(6, 9)]
    own = put("A private note of agent x.", source="book", agent_id="x")
    app.memories.forget(a[2])
    engine = app.retriever
    near = [m.id for m in engine.neighbourhood([a[3], a[4]], 2, Viewer())]
    assert near == [a[0], a[1], a[3], a[4], a[5], b[0]]  # a[2] forgotten takes no place
    # the team fact, another writer's, written between a[5] and b[0] takes no place either
    assert [m.id for m in engine.neighbourhood([b[0]], 2, Viewer())] == [a[4], a[5], *b]
    places = engine.places([a[5], b[0], other], Viewer())
    assert places[0] is not None and places[1] is not None and places[2] is not None
    assert places[1].position - places[0].position == 1 and places[2].position == 0
    assert [m.id for m in engine.neighbourhood([other], 3, Viewer())] == [other]
    assert engine.neighbourhood([own], 2, Viewer()) == []  # not visible to the agent
    assert [m.id for m in engine.neighbourhood([own], 1, Viewer("x"))] == [own]
    assert engine.neighbourhood([a[2], "no-such-id"], 2, Viewer()) == []
    # the same memories as they are now, and their rows by place
    now = engine.live_memories([a[1], a[2], own, "no-such-id"], Viewer())
    assert [m.id if m else None for m in now] == [a[1], None, None, None]
    assert engine.live_memories([own], Viewer("x"))[0] is not None
    places = np.array([m.seq for m in engine.neighbourhood([a[3]], 3, Viewer())], np.int64)
    np.testing.assert_array_equal(engine.embeddings_at(places), np.stack(
        [engine.embedding_of(m) for m in (a[0], a[1], a[3], a[4], a[5], b[0])]))
    gone = app.memories.get(a[2])
    assert gone is not None and np.isnan(engine.embeddings_at(np.array([gone.seq]))).all()


def test_each_end_user_of_an_agent_writes_a_sequence_of_their_own(app: App) -> None:
    """Two users' notes imported through one agent at once, interleaved: each user's
    neighbourhood is their own notes, the other's in between take no place."""
    def put(text: str, user: str) -> str:
        return app.memories.upsert(MemoryDraft(text, MemoryType.FACT, agent_id="desk",
                                               source="agent", user_id=user)).memory.id

    notes: dict[str, list[str]] = {"ann": [], "bob": []}
    for i in range(5):
        for user in notes:
            notes[user].append(put(f"{user} wrote travel note number {i} for the trip.", user))
    ann = Viewer("desk", "ann")
    assert [m.id for m in app.retriever.neighbourhood([notes["ann"][2]], 2, ann)] == notes["ann"]
    places = app.retriever.places([notes["ann"][1], notes["ann"][2]], ann)
    assert places[0] is not None and places[1] is not None
    assert places[1].position - places[0].position == 1
    assert app.retriever.neighbourhood([notes["bob"][2]], 2, ann) == []  # not ann's to see


def test_a_term_search_ranks_the_visible_memories_by_weighted_bm25(app: App) -> None:
    """``term_search``: the best ``k`` by BM25 of the weighted texts, as ``term_scores``
    scores them, among the memories the agent sees."""
    put = [app.memories.upsert(MemoryDraft(t, MemoryType.FACT, agent_id=o)).memory.id
           for t, o in (("The oven broke down last winter.", ""),
                        ("The oven was repaired in spring.", ""),
                        ("Bread is baked every morning at four.", ""),
                        ("The oven at the other shop broke too.", "x"))]
    engine = app.retriever
    texts = (("what broke", 1.0), ("the oven, last winter", 2.0))
    scores = engine.term_scores(put, texts)
    seen = [m for m, s in sorted(zip(put[:3], scores[:3], strict=True),
                                 key=lambda p: -p[1]) if s > 0]
    assert engine.term_search(texts, 5, Viewer()) == seen
    assert engine.term_search(texts, 1, Viewer()) == seen[:1]
    assert put[3] in engine.term_search(texts, 5, Viewer("x"))
    assert engine.term_search((("nothing matches this", 1.0),), 5, Viewer()) == []
