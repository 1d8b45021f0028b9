"""Channel diversity through the engine with the real model: hits spread over channels, the
fused scores stay as they are, no channel means today's order, and scope and forgetting
hold under each fusion."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace

import pytest

from sidecar.embedding import Embedder
from sidecar.live import Live
from sidecar.records import Memory, MemoryType
from sidecar.retrieval.config import FUSIONS, RetrievalConfig
from sidecar.retrieval.contract import SearchQuery
from sidecar.retrieval.hybrid import HybridRetriever
from tests import naive

# (text, channel, owner): three close matches in one conversation, weaker ones elsewhere.
ROWS = [
    ("API token expiry: the API token expires after one hour", "chat-a", ""),
    ("API token expiry again: we rotate the API token at expiry", "chat-a", ""),
    ("API token expiry means the API token returns 401", "chat-a", ""),
    ("The mobile app has a token", "chat-b", ""),
    ("Bob's API token expiry note", "chat-c", "bob"),
    ("Keys were discussed in the retro", "chat-d", ""),
    ("Grandma grows tomatoes and basil in her garden", "", ""),
]
QUERY = "API token expiry"
BASE = RetrievalConfig(alpha=0.0, beta=0.0, graph_share=0.0, channel_diversity=0.0)


def memory(seq: int, with_channels: bool) -> Memory:
    text, channel, owner = ROWS[seq]
    return Memory(id=f"m{seq}", content=text, type=MemoryType.FACT, importance=0.5,
                  created_at=0, updated_at=0, last_accessed_at=0, access_count=0, source="",
                  channel_id=channel if with_channels else "", agent_id=owner,
                  forgotten=False, version=1, seq=seq)


def engine_of(embedder: Embedder, with_channels: bool
              ) -> tuple[HybridRetriever, list[RetrievalConfig]]:
    current = [BASE]
    retriever = HybridRetriever(embedder, Live(lambda: current[0]))
    retriever.memories_stored([memory(s, with_channels) for s in range(len(ROWS))],
                              embedder.embed([r[0] for r in ROWS]))
    return retriever, current


@pytest.fixture
def engine(embedder: Embedder) -> Iterator[tuple[HybridRetriever, list[RetrievalConfig]]]:
    retriever, current = engine_of(embedder, True)
    yield retriever, current
    retriever.close()


def search(retriever: HybridRetriever, agent_id: str = "") -> list[tuple[str, float]]:
    hits = retriever.search(SearchQuery(QUERY, agent_id=agent_id, limit=10)).hits
    return [(h.memory.id, h.score) for h in hits]


def channel_of(memory_id: str) -> str:
    return ROWS[int(memory_id[1:])][1]


@pytest.mark.parametrize("fusion", FUSIONS)
def test_hits_spread_over_channels_with_their_scores_unchanged(
        engine: tuple[HybridRetriever, list[RetrievalConfig]], fusion: str) -> None:
    retriever, current = engine
    current[0] = replace(BASE, fusion=fusion)
    plain = search(retriever)
    current[0] = replace(BASE, fusion=fusion, channel_diversity=1.0)
    spread = search(retriever)
    assert dict(spread) == dict(plain)  # the same hits with the same fused scores
    assert [channel_of(i) for i, _ in plain[:2]] == ["chat-a"] * 2
    channels = [channel_of(i) for i, _ in spread]
    assert channels[0] == "chat-a" and channels[1] != "chat-a"
    # A penalty of the whole best score: every channel's first hit before any second one.
    named = [c for c in channels if c]
    assert named.index("chat-a", 1) > max(named.index(c) for c in set(named))


@pytest.mark.parametrize("fusion", FUSIONS)
@pytest.mark.parametrize("share", [0.05, 0.2])
def test_order_is_the_greedy_reselection_of_the_plain_ranking(
        engine: tuple[HybridRetriever, list[RetrievalConfig]], fusion: str,
        share: float) -> None:
    retriever, current = engine
    current[0] = replace(BASE, fusion=fusion)
    plain = search(retriever)
    current[0] = replace(BASE, fusion=fusion, channel_diversity=share)
    groups = {c: g for g, c in enumerate(["", *sorted({r[1] for r in ROWS} - {""})])}
    expected = naive.spread(list(range(len(plain))), [s for _, s in plain],
                            [groups[channel_of(i)] for i, _ in plain], share * plain[0][1],
                            len(plain))
    assert [i for i, _ in search(retriever)] == [plain[k][0] for k in expected]


def test_without_channels_the_order_is_unchanged(embedder: Embedder) -> None:
    retriever, current = engine_of(embedder, False)
    try:
        plain = search(retriever)
        current[0] = replace(BASE, channel_diversity=1.0)
        assert search(retriever) == plain
    finally:
        retriever.close()


@pytest.mark.parametrize("fusion", FUSIONS)
def test_scope_and_forgetting_hold(
        engine: tuple[HybridRetriever, list[RetrievalConfig]], fusion: str) -> None:
    retriever, current = engine
    current[0] = replace(BASE, fusion=fusion, channel_diversity=1.0)
    assert "m4" not in dict(search(retriever))  # bob's, alone in its channel
    assert "m4" in dict(search(retriever, agent_id="bob"))
    retriever.memories_forgotten([memory(3, True)])  # chat-b's only memory
    found = search(retriever)
    assert "m3" not in dict(found)
    assert "chat-b" not in {channel_of(i) for i, _ in found}
