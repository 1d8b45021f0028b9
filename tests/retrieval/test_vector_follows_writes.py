"""The engine's vector index follows MemoryService writes (real SQLite, real model) and is
reloaded from one read of the store across a restart."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from sidecar.embedding import Embedder
from sidecar.live import Live
from sidecar.memory.service import MemoryService
from sidecar.records import MemoryDraft, MemoryType
from sidecar.retrieval.config import RetrievalConfig
from sidecar.retrieval.hybrid import HybridRetriever
from sidecar.retrieval.vector.adaptive import AdaptiveVectorIndex, create_vector_index
from sidecar.retrieval.vector.config import VectorConfig
from sidecar.store.db import Database
from sidecar.store.repos import Repositories

TEXTS = ["The deploy runs every Friday at noon.", "Alice prefers tea over coffee.",
         "The staging database lives in eu-west-1.", "Bob is allergic to peanuts.",
         "Release 2.4 ships the new billing page."]


CONFIG = VectorConfig(exact_threshold=1)  # the hnsw path from the first memory on


def engine_on(tmp_path: Path, service: MemoryService, embedder: Embedder) -> AdaptiveVectorIndex:
    index = create_vector_index(tmp_path, CONFIG, embedder.dim)
    engine = HybridRetriever(embedder, Live.fixed(RetrievalConfig(vector=CONFIG)), index)
    engine.load(service.memories, service.edges)
    service.listeners.add(engine)
    return index


def test_index_follows_upsert_forget_revive_and_survives_restart(
    tmp_path: Path, embedder: Embedder
) -> None:
    db = Database(tmp_path / "memsidecar.sqlite3")
    service = MemoryService(Repositories.open(db), embedder)
    index = engine_on(tmp_path, service, embedder)
    stored = [service.upsert(MemoryDraft(content=t, type=MemoryType.FACT)).memory for t in TEXTS]
    assert index.wait_ready(30) and len(index) == 5
    query = embedder.embed_one("what does Alice like to drink?")
    assert index.search(query, 1)[0].tolist() == [stored[1].seq]

    service.forget(stored[1].id)
    assert len(index) == 4 and stored[1].seq not in index.search(query, 5)[0].tolist()
    service.upsert(MemoryDraft(id=stored[3].id, content="Bob now drinks only green tea.",
                               type=MemoryType.FACT))  # new embedding, same seq
    assert index.search(query, 1)[0].tolist() == [stored[3].seq]
    service.upsert(MemoryDraft(id=stored[1].id, content=TEXTS[1], type=MemoryType.FACT))
    assert len(index) == 5  # revived
    expected = [index.search(q, 3)[0].tolist() for q in embedder.embed(TEXTS)]
    index.close()
    db.close()

    db = Database(tmp_path / "memsidecar.sqlite3")
    service = MemoryService(Repositories.open(db), embedder)
    index = engine_on(tmp_path, service, embedder)
    assert index.hnsw is not None and not index.building  # the saved index was current
    assert [index.search(q, 3)[0].tolist() for q in embedder.embed(TEXTS)] == expected
    bob = embedder.embed_one("Bob now drinks only green tea.")
    np.testing.assert_allclose(index.cosine(query, np.array([stored[3].seq])), [bob @ query],
                               atol=1e-5)
    index.close()
    db.close()
