"""Fusion over any number of named lists vs a direct reading of the formula; and a source
added to the engine is fused and explained like the built-in ones."""

from __future__ import annotations

import numpy as np
import pytest

from sidecar.live import Live
from sidecar.records import Memory, MemoryType
from sidecar.retrieval.config import FUSIONS, RetrievalConfig
from sidecar.retrieval.contract import Mode, SearchQuery
from sidecar.retrieval.fusion.contract import Found, SourceContext
from sidecar.retrieval.fusion.rrf import Ranked, fuse_ranked
from sidecar.retrieval.hybrid import HybridRetriever
from sidecar.retrieval.mirror import LiveMemories
from sidecar.retrieval.vector.exact import DenseVectors

DIM = 16
NOW_US = 1_700_000_000_000_000


def memory(seq: int, importance: float, updated_at: int = NOW_US) -> Memory:
    return Memory(id=f"m{seq}", content=f"note {seq}", type=MemoryType.FACT,
                  importance=importance, created_at=0, updated_at=updated_at,
                  last_accessed_at=0, access_count=0, source="", channel_id="", agent_id="",
                  forgotten=False, version=1, seq=seq)


@pytest.mark.parametrize("sources", [1, 2, 4])
def test_fuse_ranked_matches_the_formula(sources: int) -> None:
    rng = np.random.default_rng(sources)
    live = LiveMemories()
    live.put([memory(s, float(rng.random())) for s in range(1, 41)])
    lists = [Ranked(f"s{i}", float(rng.random() * 2), rng.permutation(np.arange(1, 41))[:15])
             for i in range(sources)]
    config = RetrievalConfig(alpha=0.0, beta=0.0)
    fused = fuse_ranked(lists, live, config, limit=10)
    expected: dict[int, float] = {}
    for ranked in lists:
        for rank, label in enumerate(ranked.labels.tolist(), start=1):
            expected[label] = expected.get(label, 0.0) + ranked.weight / (config.rrf_k + rank)
    best = sorted(expected, key=lambda label: (-expected[label], label))[:10]
    assert fused.labels.tolist() == best
    np.testing.assert_allclose(fused.scores, [expected[b] for b in best], rtol=1e-12)
    for row, label in enumerate(best):
        for column, ranked in enumerate(lists):
            hits = np.flatnonzero(ranked.labels == label)
            assert fused.ranks[row, column] == (hits[0] + 1 if len(hits) else 0)


class LastWritten:
    """A throwaway source: the most recently updated memories."""

    name = "recent"

    def weight(self, config: RetrievalConfig) -> float:
        return 50.0

    def share(self, config: RetrievalConfig) -> float:
        return 50.0

    def search(self, ctx: SourceContext) -> Found:
        assert set(ctx.found) == {"vector", "lexical", "graph"}  # earlier sources' lists
        seqs = np.flatnonzero(ctx.live.alive)
        order = np.argsort(-ctx.live.updated_at[seqs], kind="stable")
        best = seqs[order][: ctx.query.search_limit].astype(np.int64)
        return Found(best, 1.0 / np.arange(1, len(best) + 1))  # newest scores best


@pytest.mark.parametrize("fusion", FUSIONS)
def test_an_added_source_is_fused_and_explained(fusion: str) -> None:
    rng = np.random.default_rng(0)
    config = RetrievalConfig(alpha=0.0, beta=0.0, fusion=fusion)
    engine = HybridRetriever(embedder=None,  # type: ignore[arg-type]
                             config=Live.fixed(config),
                             vectors=DenseVectors(DIM))
    memories = [memory(s, 0.5, updated_at=NOW_US + s) for s in range(1, 21)]
    vectors = rng.standard_normal((20, DIM)).astype(np.float32)
    engine.memories_stored(memories, vectors / np.linalg.norm(vectors, axis=1, keepdims=True))
    engine.later_sources = (*engine.later_sources, LastWritten())
    query = SearchQuery("note", limit=5, search_limit=5, embedding=vectors[0] / np.linalg.norm(
        vectors[0]))
    hits = engine.search(query).hits
    assert [r.name for r in hits[0].ranks] == ["vector", "lexical", "graph", "recent"]
    assert hits[0].memory.seq == 20 and hits[0].rank("recent") == 1  # its weight dominates
    assert "recent" in engine.search(query).timings_us
    vector_only = engine.search(SearchQuery("note", limit=5, mode=Mode.VECTOR,
                                            embedding=query.embedding)).hits
    assert all(h.rank("recent") == 0 for h in vector_only)
