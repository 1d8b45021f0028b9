"""The similarity background (mean and spread of a query's cosine to the store) against the
exact figures over every live vector, also as the engine follows writes (real model)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from sidecar.embedding import Embedder
from sidecar.live import Live
from sidecar.memory.service import MemoryService
from sidecar.records import MemoryDraft, MemoryType
from sidecar.retrieval.background import SimilarityBackground, uniform
from sidecar.retrieval.config import RetrievalConfig
from sidecar.retrieval.hybrid import HybridRetriever
from sidecar.store.db import Database
from sidecar.store.repos import Repositories


def exact(vectors: np.ndarray, query: np.ndarray) -> tuple[float, float, int]:
    cosines = vectors.astype(np.float64) @ query.astype(np.float64)
    return float(cosines.mean()), float(cosines.std()), len(vectors)


def unit_rows(rng: np.random.Generator, n: int) -> np.ndarray:
    v = rng.normal(size=(n, 16)).astype(np.float32)
    v[:, 0] += 1.0  # a common direction, as real embeddings have
    return np.asarray(v / np.linalg.norm(v, axis=1, keepdims=True), np.float32)


class Store:
    def __init__(self, rows: np.ndarray) -> None:
        self.rows = rows
        self.draws = 0

    def draw(self, n: int) -> tuple[np.ndarray, int]:
        self.draws += 1
        return self.rows[uniform(np.arange(len(self.rows)), n)], len(self.rows)


def test_exact_below_the_sample_size_and_drawn_again_after_changes() -> None:
    rng = np.random.default_rng(3)
    store, query = Store(unit_rows(rng, 0)), unit_rows(rng, 1)[0]
    bg = SimilarityBackground(store.draw, size=500)
    assert bg.of(query) == (0.0, 0.0, 0)
    store.rows = unit_rows(rng, 300)
    bg.changed(300)
    assert np.allclose(bg.of(query), exact(store.rows, query), atol=1e-6)
    draws = store.draws
    store.rows = store.rows[:280]
    bg.changed(20)  # under a tenth of the store: the sample stays
    bg.of(query)
    assert store.draws == draws
    bg.changed(11)  # over a tenth since the draw
    assert np.allclose(bg.of(query), exact(store.rows, query), atol=1e-6)


def test_sample_estimates_a_large_store() -> None:
    rng = np.random.default_rng(5)
    store = Store(unit_rows(rng, 20_000))
    bg = SimilarityBackground(store.draw, size=1024)
    for query in unit_rows(rng, 5):
        mean, sd, count = bg.of(query)
        want_mean, want_sd, _ = exact(store.rows, query)
        assert count == 20_000
        assert abs(mean - want_mean) < 0.1 * want_sd and abs(sd / want_sd - 1) < 0.1


def test_engine_background_follows_upsert_and_forget(tmp_path: Path, embedder: Embedder) -> None:
    db = Database(tmp_path / "memsidecar.sqlite3")
    service = MemoryService(Repositories.open(db), embedder)
    engine = HybridRetriever(embedder, Live.fixed(RetrievalConfig()))
    service.upsert(MemoryDraft(content="The deploy runs every Friday at noon.",
                               type=MemoryType.FACT))
    engine.load(service.memories, service.edges)  # one memory read at start
    service.listeners.add(engine)
    query = embedder.embed_one("what does Bob drink?")
    assert engine.similarity_background(query)[2] == 1
    texts = ["Alice prefers tea over coffee.", "The staging database lives in eu-west-1.",
             "Bob is allergic to peanuts.", "Release 2.4 ships the new billing page."]
    stored = [service.upsert(MemoryDraft(content=t, type=MemoryType.FACT)).memory for t in texts]
    service.forget(stored[0].id)
    service.upsert(MemoryDraft(id=stored[2].id, content="Bob now drinks only green tea.",
                               type=MemoryType.FACT))  # new embedding, same seq
    live = ["The deploy runs every Friday at noon.", "The staging database lives in eu-west-1.",
            "Bob now drinks only green tea.", "Release 2.4 ships the new billing page."]
    assert np.allclose(engine.similarity_background(query), exact(embedder.embed(live), query),
                       atol=1e-5)
    db.close()
