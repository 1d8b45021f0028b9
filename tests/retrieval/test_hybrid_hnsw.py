"""The engine over the adaptive vector index App wires in, with hnswlib answering (a low exact
threshold): scope, forgetting and updates hold on the approximate path too, and the vector
ranks follow the exact cosines."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace

import pytest

from sidecar.api.server_config import ServerConfig
from sidecar.app import App
from sidecar.embedding import Embedder
from sidecar.records import MemoryDraft, MemoryType
from sidecar.retrieval.config import RetrievalConfig
from sidecar.retrieval.contract import Mode, SearchQuery
from sidecar.retrieval.vector.config import VectorConfig
from tests.conftest import settings_for

TOPICS = ["cooking pasta", "training for a marathon", "fixing the car brakes", "learning French",
          "planting tomatoes", "budgeting for a trip", "painting the kitchen", "adopting a cat"]


@pytest.fixture
def hnsw_app(config: ServerConfig, embedder: Embedder) -> Iterator[App]:
    vectors = VectorConfig(exact_threshold=32, persist=False)
    app = App.open(config, embedder=embedder, settings=settings_for(
        config, retrieval=RetrievalConfig(vector=vectors)))
    drafts = [MemoryDraft(f"Note {i}: I spent the weekend {TOPICS[i % len(TOPICS)]}",
                          MemoryType.EVENT, agent_id="bob" if i % 5 == 0 else "")
              for i in range(64)]
    app.memories.import_stream(drafts)
    assert app.vectors is not None and app.vectors.wait_ready(60)
    assert app.vectors.stats()["engine"] == "hnsw"
    yield app
    app.close()


def test_hnsw_path_keeps_scope_forgetting_and_order(hnsw_app: App) -> None:
    retriever = hnsw_app.retriever
    q = SearchQuery("weekend fixing the car brakes", limit=20, search_limit=20)
    hits = retriever.search(q).hits
    assert hits and all(not h.memory.agent_id for h in hits)  # bob's notes stay hidden
    bob = retriever.search(replace(q, agent_id="bob")).hits
    assert any(h.memory.agent_id == "bob" for h in bob)
    vec = retriever.search(replace(q, mode=Mode.VECTOR)).hits
    cos = [h.cosine for h in sorted(vec, key=lambda h: h.rank("vector"))]
    assert cos == sorted(cos, reverse=True)
    top = hits[0].memory
    hnsw_app.memories.forget(top.id)
    for mode in Mode:
        assert top.id not in {h.memory.id for h in retriever.search(replace(q, mode=mode)).hits}
    other = vec[-1].memory
    hnsw_app.memories.upsert(MemoryDraft("Quantum chromodynamics lecture notes",
                                         MemoryType.FACT, id=other.id))
    moved = retriever.search(SearchQuery("quantum chromodynamics", limit=3)).hits
    assert moved[0].memory.id == other.id and moved[0].memory.version == 2
