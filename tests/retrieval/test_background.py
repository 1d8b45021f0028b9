"""The similarity background (mean and spread of a query's cosine to the store) against the
exact figures over the live vectors, also as the engine follows writes (real model)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from sidecar.embedding import Embedder
from sidecar.live import Live
from sidecar.memory.service import MemoryService
from sidecar.records import MemoryDraft, MemoryType
from sidecar.retrieval.background import SimilarityBackground
from sidecar.retrieval.config import RetrievalConfig
from sidecar.retrieval.hybrid import HybridRetriever
from sidecar.store.db import Database
from sidecar.store.repos import Repositories


def exact(vectors: np.ndarray, query: np.ndarray) -> tuple[float, float, int]:
    cosines = vectors.astype(np.float64) @ query.astype(np.float64)
    return float(cosines.mean()), float(cosines.std()), len(vectors)


def unit_rows(rng: np.random.Generator, n: int) -> np.ndarray:
    v = rng.normal(size=(n, 16)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def test_running_sums_match_the_exact_mean_and_spread() -> None:
    rng = np.random.default_rng(3)
    rows, query = unit_rows(rng, 300), unit_rows(rng, 1)[0]
    bg = SimilarityBackground(16)
    assert bg.of(query) == (0.0, 0.0, 0)
    bg.add(rows[:200])
    bg.add(rows[200:])
    bg.remove(rows[:50])
    bg.add(np.empty((0, 16), np.float32))
    assert len(bg) == 250
    assert np.allclose(bg.of(query), exact(rows[50:], query), atol=1e-6)


def test_engine_background_follows_upsert_and_forget(tmp_path: Path, embedder: Embedder) -> None:
    db = Database(tmp_path / "memsidecar.sqlite3")
    service = MemoryService(Repositories.open(db), embedder)
    engine = HybridRetriever(embedder, Live.fixed(RetrievalConfig()))
    service.upsert(MemoryDraft(content="The deploy runs every Friday at noon.",
                               type=MemoryType.FACT))
    engine.load(service.memories, service.edges)  # one memory read at start
    service.listeners.add(engine)
    texts = ["Alice prefers tea over coffee.", "The staging database lives in eu-west-1.",
             "Bob is allergic to peanuts.", "Release 2.4 ships the new billing page."]
    stored = [service.upsert(MemoryDraft(content=t, type=MemoryType.FACT)).memory for t in texts]
    service.forget(stored[0].id)
    service.upsert(MemoryDraft(id=stored[2].id, content="Bob now drinks only green tea.",
                               type=MemoryType.FACT))  # new embedding, same seq
    query = embedder.embed_one("what does Bob drink?")
    live = ["The deploy runs every Friday at noon.", "The staging database lives in eu-west-1.",
            "Bob now drinks only green tea.", "Release 2.4 ships the new billing page."]
    assert len(engine.background) == 4
    assert np.allclose(engine.similarity_background(query), exact(embedder.embed(live), query),
                       atol=1e-5)
    db.close()
