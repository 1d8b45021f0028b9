"""The engine's one-pass score fusion (``retrieval.pooled``) against a straightforward
reference on a real store (real model, SQLite, sources, graph): same candidates in the same
order, same scores, cosines, ranks and rows, for every mode, with filters and edges."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from sidecar.app import App
from sidecar.records import MemoryDraft, MemoryType, Relation
from sidecar.retrieval.config import SCORES
from sidecar.retrieval.contract import Hit, Mode, SearchQuery
from sidecar.retrieval.fusion.contract import Found, SourceContext, fusion_weight, nothing
from sidecar.retrieval.fusion.pool import S_PER_DAY, Ranked, pool_of
from sidecar.retrieval.fusion.scores import fuse_pool_scores
from sidecar.retrieval.hybrid import HybridRetriever
from sidecar.retrieval.stages import VECTOR
from sidecar.timing import now_us
from tests import naive
from tests.retrieval.corpus import QUERIES, corpus

KINDS = list(MemoryType)


@pytest.fixture
def store(app: App) -> App:
    svc = app.memories
    stored = []
    for i, text in enumerate(corpus(80, seed=3)):
        if text.strip():
            stored.append(svc.upsert(MemoryDraft(
                text, KINDS[i % len(KINDS)], agent_id="bob" if i % 9 == 4 else "",
                importance=0.9 if i % 5 == 0 else None)).memory)
    shared = [m for m in stored if not m.agent_id]
    for a, b in zip(shared[::4], shared[2::4], strict=False):
        svc.add_edge(a.id, b.id, Relation.RELATED_TO, 0.7)
    return app


def source_lists(engine: HybridRetriever, query: SearchQuery
                 ) -> tuple[np.ndarray, dict[str, Found]]:
    """The query embedding and each source's list, as the engine runs them."""
    embedding = engine.embed_query(query.text)
    ctx = SourceContext(engine.config, query, engine.live,
                        engine.live.accept(query.viewer, query.types), embedding=embedding)
    found: dict[str, Found] = {}
    for source in engine.sources:
        ctx = replace(ctx, found={name: f.labels for name, f in found.items()})
        found[source.name] = source.search(ctx) if query.mode.uses(source.name) else nothing()
    return embedding, found


def reference(engine: HybridRetriever, query: SearchQuery) -> list[tuple[int, float, float,
                                                                         tuple[int, ...]]]:
    """(label, fused score, cosine, ranks) of the top hits, computed plainly: the sources'
    lists, the union of their labels, each candidate's cosine with its stored vector, then
    the score fusion formula written out (``naive.score_fusion``)."""
    c = engine.config
    embedding, found = source_lists(engine, query)
    lists = [(found[s.name].labels.tolist(), found[s.name].scores.tolist())
             for s in engine.sources]
    labels, ranks, values = naive.pool(lists)
    vector_column = [s.name for s in engine.sources].index(VECTOR)
    present = np.array(ranks) > 0
    values_array = np.array(values, np.float64).reshape(len(labels), len(lists))
    cosines = []
    for i, label in enumerate(labels):
        stored = engine.vectors.vector(label)
        cosine = float(np.dot(stored.astype(np.float64), embedding.astype(np.float64)))
        cosines.append(cosine)
        if query.mode.uses(VECTOR):
            values_array[i, vector_column] = cosine
            present[i, vector_column] = True
    live = engine.live
    ages = [(now_us() - live.updated_at[x]) / 1e6 for x in labels]
    scores, order = naive.score_fusion(
        values_array, present.reshape(values_array.shape),
        np.array([fusion_weight(s, c) for s in engine.sources]), c.score_normalisation,
        np.array([live.importance[x] for x in labels]), np.array(ages), c.alpha, c.beta,
        c.recency_half_life_days * S_PER_DAY, np.array(labels))
    return [(labels[i], scores[i], cosines[i], tuple(ranks[i])) for i in order[:query.limit]]


def composed(engine: HybridRetriever, query: SearchQuery) -> list[tuple[int, float]]:
    """(label, fused score) of the top hits by the composition the kernel replaces: the
    pool (``pool_of``), the rows' cosines, ``fuse_pool_scores``."""
    c = engine.config
    embedding, found = source_lists(engine, query)
    lists = [Ranked(s.name, fusion_weight(s, c), *found[s.name][:2]) for s in engine.sources]
    pool = pool_of(lists)
    cosines = engine.vectors.rows_of(pool.labels) @ embedding
    fused = fuse_pool_scores(pool, lists, cosines if query.mode.uses(VECTOR) else None,
                             engine.live, c, query.limit)
    return list(zip(fused.labels.tolist(), fused.scores.tolist(), strict=True))


def summary(hit: Hit) -> tuple[int, float, float, tuple[int, ...]]:
    return hit.memory.seq, hit.score, hit.cosine, tuple(r.rank for r in hit.ranks)


@pytest.mark.parametrize("mode", list(Mode))
@pytest.mark.parametrize("agent,types", [("", ()), ("bob", ()),
                                          ("ann", (MemoryType.FACT, MemoryType.DECISION))])
def test_matches_the_reference(store: App, mode: Mode, agent: str,
                               types: tuple[MemoryType, ...]) -> None:
    engine = store.retriever
    assert isinstance(engine, HybridRetriever) and engine.config.fusion == SCORES
    checked, by_source = 0, set()
    for text in QUERIES:
        query = SearchQuery(text, agent_id=agent, limit=12, search_limit=15, mode=mode,
                            types=types)
        hits = engine.search(query).hits
        expected = reference(engine, query)
        assert [h.memory.seq for h in hits] == [e[0] for e in expected], text
        assert [h.memory.seq for h in hits] == [x for x, _ in composed(engine, query)], text
        # float32 products there: the scores agree to ~1e-7.
        assert [h.score for h in hits] == pytest.approx([y for _, y in composed(engine, query)],
                                                        abs=1e-6)
        for hit, (_, score, cosine, ranks) in zip(hits, expected, strict=True):
            # Ages are read a few microseconds apart: the recency boost moves by ~1e-13.
            assert hit.score == pytest.approx(score, abs=1e-9)
            assert hit.cosine == pytest.approx(cosine, abs=1e-9)
            assert tuple(r.rank for r in hit.ranks) == ranks
            assert hit.embedding is not None
            np.testing.assert_array_equal(hit.embedding, engine.vectors.vector(hit.memory.seq))
        checked += len(hits)
        by_source |= {r.name for h in hits for r in h.ranks if r.rank}
    assert checked > 0
    # Every source this mode runs contributed somewhere (the graph: its linked memories).
    assert types or by_source == {s.name for s in engine.sources if mode.uses(s.name)}


def test_a_candidate_without_a_row_keeps_its_place_without_cosine(store: App) -> None:
    """A row dropped between the sources and the fusion (a concurrent forget) scores 0 on
    the vector side, as in the reference, and its hit carries no embedding."""
    engine = store.retriever
    assert isinstance(engine, HybridRetriever)
    query = SearchQuery("term1 term2", limit=20, search_limit=20, mode=Mode.LEXICAL)
    before = engine.search(query).hits
    gone = before[0].memory.seq
    inner = engine.vectors
    original = inner.locked_rows

    def without_row():  # type: ignore[no-untyped-def]
        inner.remove(np.array([gone]))
        return original()

    engine.vectors.locked_rows = without_row  # type: ignore[method-assign]
    hits = engine.search(query).hits
    after = {h.memory.seq: h for h in hits}
    assert gone in after and after[gone].embedding is None and np.isnan(after[gone].cosine)
    assert [summary(h)[0] for h in hits] == [summary(h)[0] for h in before]
