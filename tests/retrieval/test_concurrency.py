"""Searches racing writes: no errors, and a memory forgotten before a search starts never
appears in it (engine level, synthetic embeddings, no model needed)."""

from __future__ import annotations

import threading

import numpy as np

from sidecar.records import Memory, MemoryType
from sidecar.retrieval.config import RetrievalConfig
from sidecar.retrieval.contract import SearchQuery
from sidecar.retrieval.hybrid import HybridRetriever

WORDS = ["alpha", "beta", "gamma", "delta", "omega", "sigma", "kappa", "lambda"]


def memory(seq: int, rng: np.random.Generator) -> Memory:
    text = " ".join(rng.choice(WORDS, size=6))
    return Memory(id=f"m{seq}", content=text, type=MemoryType.FACT, importance=0.6,
                  created_at=0, updated_at=0, last_accessed_at=0, access_count=0, source="",
                  channel_id="", agent_id="", forgotten=False, version=1, seq=seq)


def unit(n: int, rng: np.random.Generator) -> np.ndarray:
    x = rng.standard_normal((n, 384)).astype(np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def test_searches_racing_writes() -> None:
    rng = np.random.default_rng(0)
    engine = HybridRetriever(embedder=None,  # type: ignore[arg-type]
                             config=RetrievalConfig(parallel_min_memories=0))
    first = [memory(s, rng) for s in range(1, 301)]
    engine.memories_stored(first, unit(len(first), rng))
    forgotten: set[str] = set()
    errors: list[BaseException] = []
    stop = threading.Event()

    def writer() -> None:
        wrng = np.random.default_rng(1)
        seq = 301
        try:
            for step in range(300):
                batch = [memory(seq + i, wrng) for i in range(5)]
                seq += 5
                engine.memories_stored(batch, unit(5, wrng))
                victim = first[step % len(first)]
                engine.memories_forgotten([victim])
                forgotten.add(victim.id)
        except BaseException as err:  # noqa: BLE001
            errors.append(err)
        finally:
            stop.set()

    def reader(seed: int) -> None:
        rrng = np.random.default_rng(seed)
        try:
            while not stop.is_set():
                gone = set(forgotten)  # forgotten before this search started
                q = SearchQuery(" ".join(rrng.choice(WORDS, size=3)), limit=20,
                                embedding=unit(1, rrng)[0])
                hits = engine.search(q).hits
                assert not gone & {h.memory.id for h in hits}
                assert all(np.isfinite(h.cosine) for h in hits)
        except BaseException as err:  # noqa: BLE001
            errors.append(err)

    threads = [threading.Thread(target=writer)] + [
        threading.Thread(target=reader, args=(s,)) for s in (2, 3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    engine.close()
    assert not errors, errors[0]
    assert len(engine.live) == 300 + 1500 - 300
