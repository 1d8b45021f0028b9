"""Score fusion through the engine with the real model: the fused score is the documented
formula, its two ends are the single sources, and scope and forgetting hold as under RRF."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace

import pytest

from sidecar.embedding import Embedder
from sidecar.live import Live
from sidecar.records import Memory, MemoryType, Viewer
from sidecar.retrieval.config import FUSIONS, RetrievalConfig
from sidecar.retrieval.contract import Mode, SearchQuery
from sidecar.retrieval.hybrid import HybridRetriever

TEXTS = [
    "We chose JWT over session tokens for the API",
    "The auth module lives in src/auth with three files",
    "Grandma grows tomatoes and basil in her garden",
    "Deploys happen every Tuesday after the standup",
    "Token refresh fails when the clock skews by more than a minute",
    "Login breaks if the server time drifts",
    "Rotate the signing keys of the API every quarter",
    "Bob keeps the API token in his private notes",
]
PRIVATE = 7  # owned by "bob"
QUERY = "API token expiry"
NO_BOOST = RetrievalConfig(alpha=0.0, beta=0.0, graph_share=0.0)


def memory(seq: int, text: str) -> Memory:
    return Memory(id=f"m{seq}", content=text, type=MemoryType.FACT, importance=0.5,
                  created_at=0, updated_at=0, last_accessed_at=0, access_count=0, source="",
                  channel_id="", agent_id="bob" if seq == PRIVATE else "", forgotten=False,
                  version=1, seq=seq)


@pytest.fixture
def engine(embedder: Embedder) -> Iterator[tuple[HybridRetriever, list[RetrievalConfig]]]:
    current = [NO_BOOST]
    retriever = HybridRetriever(embedder, Live(lambda: current[0]))
    memories = [memory(seq, text) for seq, text in enumerate(TEXTS)]
    retriever.memories_stored(memories, embedder.embed(TEXTS))
    yield retriever, current
    retriever.close()


def search(retriever: HybridRetriever, **kw: object) -> list[tuple[str, float, float]]:
    hits = retriever.search(SearchQuery(QUERY, **kw)).hits  # type: ignore[arg-type]
    return [(h.memory.id, h.score, h.cosine) for h in hits]


@pytest.mark.parametrize("normalisation", ["max", "minmax"])
@pytest.mark.parametrize("share", [0.0, 0.3, 0.7, 1.0])
def test_fused_score_is_the_documented_formula(
        engine: tuple[HybridRetriever, list[RetrievalConfig]], share: float,
        normalisation: str) -> None:
    retriever, current = engine
    current[0] = replace(NO_BOOST, lexical_share=share, score_normalisation=normalisation)
    hits = search(retriever, limit=10)
    labels, bm25 = retriever.lexical.search(QUERY, 20, retriever.live.accept(Viewer(), ()))
    lexical = dict(zip((f"m{s}" for s in labels.tolist()), bm25.tolist(), strict=True))
    assert {i for i, _, _ in hits} >= set(lexical)  # the pool holds every source's list
    cosines = [c for _, _, c in hits]

    def norm(x: float, values: list[float]) -> float:
        if normalisation == "max":
            return x / max(values)
        return (x - min(values)) / (max(values) - min(values))

    for memory_id, score, cosine in hits:
        expected = (1 - share) * norm(cosine, cosines)
        if memory_id in lexical:
            expected += share * norm(lexical[memory_id], list(lexical.values()))
        assert score == pytest.approx(expected, abs=1e-6)
    assert [s for _, s, _ in hits] == sorted((s for _, s, _ in hits), reverse=True)


def test_shares_at_the_ends_give_each_sources_order(
        engine: tuple[HybridRetriever, list[RetrievalConfig]]) -> None:
    retriever, current = engine
    current[0] = replace(NO_BOOST, lexical_share=0.0)
    by_cosine = search(retriever, limit=10)
    assert [c for _, _, c in by_cosine] == sorted((c for _, _, c in by_cosine), reverse=True)
    current[0] = replace(NO_BOOST, lexical_share=1.0)
    lexical = [i for i, _, _ in search(retriever, limit=10, mode=Mode.LEXICAL)]
    assert [i for i, _, _ in search(retriever, limit=10)][: len(lexical)] == lexical


@pytest.mark.parametrize("fusion", FUSIONS)
def test_scope_and_forgetting_hold_under_each_fusion(
        engine: tuple[HybridRetriever, list[RetrievalConfig]], fusion: str) -> None:
    retriever, current = engine
    current[0] = replace(NO_BOOST, fusion=fusion)
    assert f"m{PRIVATE}" not in {i for i, _, _ in search(retriever, limit=10)}
    assert f"m{PRIVATE}" in {i for i, _, _ in search(retriever, limit=10, agent_id="bob")}
    retriever.memories_forgotten([memory(0, TEXTS[0])])
    for mode in Mode:
        assert "m0" not in {i for i, _, _ in search(retriever, limit=10, mode=mode)}


def test_query_term_cap_reaches_the_lexical_source(
        engine: tuple[HybridRetriever, list[RetrievalConfig]]) -> None:
    retriever, current = engine
    current[0] = replace(NO_BOOST, bm25_query_max_terms=1)
    capped = retriever.search(SearchQuery("grandma API", mode=Mode.LEXICAL)).hits
    assert [h.memory.content for h in capped] == [TEXTS[2]]  # only "grandma", the rarer term
    current[0] = NO_BOOST
    assert len(retriever.search(SearchQuery("grandma API", mode=Mode.LEXICAL)).hits) > 1
