"""Searches racing writes: no errors, and a memory forgotten before a search starts never
appears in it (engine level, synthetic embeddings, no model needed)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import replace

import numpy as np
import pytest

from sidecar.live import Live
from sidecar.records import Memory, MemoryType
from sidecar.retrieval.config import RetrievalConfig
from sidecar.retrieval.contract import Mode, SearchQuery
from sidecar.retrieval.hybrid import HybridRetriever
from sidecar.retrieval.vector.exact import DenseVectors

DIM = 384  # synthetic embeddings of the model's size
WORDS = ["alpha", "beta", "gamma", "delta", "omega", "sigma", "kappa", "lambda"]


def memory(seq: int, rng: np.random.Generator) -> Memory:
    text = " ".join(rng.choice(WORDS, size=6))
    return Memory(id=f"m{seq}", content=text, type=MemoryType.FACT, importance=0.6,
                  created_at=0, updated_at=0, last_accessed_at=0, access_count=0, source="",
                  channel_id="", agent_id="", forgotten=False, version=1, seq=seq)


def unit(n: int, rng: np.random.Generator) -> np.ndarray:
    x = rng.standard_normal((n, DIM)).astype(np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def run_together(writer: Callable[[], None], reader: Callable[[int], None],
                 seeds: tuple[int, ...]) -> None:
    """One writer thread and a reader thread per seed, started together and joined."""
    threads = [threading.Thread(target=writer)] + [
        threading.Thread(target=reader, args=(seed,)) for seed in seeds]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def test_searches_racing_writes() -> None:
    rng = np.random.default_rng(0)
    engine = HybridRetriever(embedder=None,  # type: ignore[arg-type]
                             config=Live.fixed(RetrievalConfig(parallel_min_memories=0)),
                             vectors=DenseVectors(DIM))
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

    run_together(writer, reader, (2, 3))
    engine.close()
    assert not errors, errors[0]
    assert len(engine.live) == 300 + 1500 - 300


class _WriteDuringSearch:
    """A DenseVectors that runs ``write`` once, inside the next search's call to ``rows_of``
    or ``locked_rows`` (every mode calls one after its sources, before the hits are
    assembled): a
    commit landing while a query is in flight, after it chose its filter and candidates."""

    def __init__(self) -> None:
        self.inner = DenseVectors(DIM)
        self.write: Callable[[], None] | None = None

    def __getattr__(self, name: str) -> object:
        return getattr(self.inner, name)

    def _fire(self) -> None:
        write, self.write = self.write, None
        if write is not None:
            write()

    def rows_of(self, labels: np.ndarray) -> np.ndarray:
        self._fire()
        return self.inner.rows_of(labels)

    def locked_rows(self) -> AbstractContextManager[tuple[np.ndarray, np.ndarray]]:
        self._fire()
        return self.inner.locked_rows()


@pytest.mark.parametrize("mode", [Mode.VECTOR, Mode.LEXICAL, Mode.HYBRID])
def test_memory_turned_private_during_a_search_is_not_returned_to_another_agent(
    mode: Mode,
) -> None:
    rng = np.random.default_rng(4)
    vectors = _WriteDuringSearch()
    engine = HybridRetriever(embedder=None,  # type: ignore[arg-type]
                             config=Live.fixed(RetrievalConfig(parallel_min_memories=0)),
                             vectors=vectors)  # type: ignore[arg-type]
    shared = [memory(s, rng) for s in range(1, 41)]
    embeddings = unit(len(shared), rng)
    engine.memories_stored(shared, embeddings)
    target = shared[0]
    # No private memory yet: the query for agent "a" runs unfiltered. Meanwhile agent "b"
    # takes memory 1 over (an upsert may change agent_id) and makes it an event.
    private = replace(target, agent_id="b", type=MemoryType.EVENT, version=2)
    vectors.write = lambda: engine.memories_stored([private], embeddings[:1])
    q = SearchQuery(target.content, agent_id="a", limit=40, search_limit=40, mode=mode,
                    embedding=embeddings[0])
    hits = engine.search(q).hits
    assert hits and all(h.memory.visible_to("a") for h in hits)
    assert target.id not in {h.memory.id for h in hits}
    # Same with a type filter: a memory whose type changed mid-search is not returned.
    vectors.write = lambda: engine.memories_stored([replace(shared[1], type=MemoryType.EVENT,
                                                            version=2)], embeddings[1:2])
    typed = SearchQuery(shared[1].content, agent_id="a", limit=40, search_limit=40, mode=mode,
                        types=(MemoryType.FACT,), embedding=embeddings[1])
    hits = engine.search(typed).hits
    assert hits and all(h.memory.type is MemoryType.FACT for h in hits)
    engine.close()


def test_searches_racing_ownership_changes_never_see_another_agents_memory() -> None:
    rng = np.random.default_rng(8)
    engine = HybridRetriever(embedder=None,  # type: ignore[arg-type]
                             config=Live.fixed(RetrievalConfig(parallel_min_memories=0)),
                             vectors=DenseVectors(DIM))
    shared = [memory(s, rng) for s in range(1, 201)]
    embeddings = unit(len(shared), rng)
    engine.memories_stored(shared, embeddings)
    errors: list[BaseException] = []
    stop = threading.Event()

    def writer() -> None:  # memories move between shared and agent "b", or are forgotten
        wrng = np.random.default_rng(9)
        try:
            for step in range(400):
                i = int(wrng.integers(0, len(shared)))
                owner = "b" if step % 2 == 0 else ""
                moved = replace(shared[i], agent_id=owner, version=step + 2)
                engine.memories_stored([moved], embeddings[i : i + 1])
                if step % 7 == 0:
                    engine.memories_forgotten([moved])
        except BaseException as err:  # noqa: BLE001
            errors.append(err)
        finally:
            stop.set()

    def reader(seed: int) -> None:
        rrng = np.random.default_rng(seed)
        try:
            while not stop.is_set():
                mode = (Mode.VECTOR, Mode.LEXICAL, Mode.HYBRID)[int(rrng.integers(0, 3))]
                q = SearchQuery(" ".join(rrng.choice(WORDS, size=3)), agent_id="a", limit=30,
                                search_limit=30, mode=mode, embedding=unit(1, rrng)[0])
                hits = engine.search(q).hits
                assert all(h.memory.visible_to("a") and not h.memory.forgotten for h in hits)
                assert len({h.memory.id for h in hits}) == len(hits)
        except BaseException as err:  # noqa: BLE001
            errors.append(err)

    run_together(writer, reader, (10, 11))
    engine.close()
    assert not errors, errors[0]
