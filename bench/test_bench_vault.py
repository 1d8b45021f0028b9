"""Vault costs: the write gate per write, snapshot build, PII scan, consolidation scan.

Run: .venv/bin/python -m pytest bench/test_bench_vault.py --benchmark-only -p no:cacheprovider
Stores are filled with random unit vectors (the gate's cost does not depend on what the
vectors mean), so nothing has to be embedded; the write path itself is real SQLite.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from sidecar.live import Live
from sidecar.memory.service import MemoryService
from sidecar.records import Memory, MemoryDraft, MemoryType, Tier
from sidecar.retrieval.hybrid import HybridRetriever
from sidecar.retrieval.vector.exact import DenseVectors
from sidecar.store.db import Database
from sidecar.store.repos import Repositories
from sidecar.vault import Vault, VaultConfig
from sidecar.vault.hygiene import similar_pairs
from sidecar.vault.pii import find_pii

TEXT = ("The user prefers concise answers, works on the billing service in Go, deploys "
        "on Fridays after the 3pm review, and asked to be reminded about the Q3 roadmap "
        "meeting with the design team; order 1234567812345678 is still pending. ") * 2


DIM = 384  # synthetic embeddings of the model's size


class NoEmbedder:
    def embed_one(self, text: str) -> np.ndarray:
        raise AssertionError("not used")


def unit(rng: np.random.Generator, n: int) -> np.ndarray:
    x = rng.normal(size=(n, DIM)).astype(np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def fill(db: Database, n: int, agents: int) -> None:
    service = MemoryService(Repositories.open(db), NoEmbedder())  # type: ignore[arg-type]
    vectors = unit(np.random.default_rng(0), n)
    with db.transaction():
        for i in range(n):
            memory = Memory(
                id=str(uuid.uuid4()), content=f"memory {i} {TEXT[:80]}", type=MemoryType.FACT,
                importance=0.6, created_at=i + 1, updated_at=i + 1, last_accessed_at=0,
                access_count=0, source="bench", channel_id="", agent_id=f"a{i % agents}",
                forgotten=False, version=1, tier=Tier.CANON if i % 10 else Tier.REGISTER,
                topic_id="" if i % 10 else f"t{i}",
            )
            service.memories.insert(memory, vectors[i])


@pytest.fixture(scope="module", params=[1_000, 10_000, 50_000])
def store(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
          ) -> Iterator[tuple[int, Vault]]:
    n = int(request.param)
    db = Database(Path(tmp_path_factory.mktemp("vb")) / "bench.sqlite3")
    fill(db, n, agents=2)
    service = MemoryService(Repositories.open(db), NoEmbedder())  # type: ignore[arg-type]
    engine = HybridRetriever(NoEmbedder(), vectors=DenseVectors(DIM))  # type: ignore[arg-type]
    engine.load(service.memories, service.edges)
    service.listeners.add(engine)
    yield n, Vault(service, engine.scopes, Live.fixed(VaultConfig(max_memories_per_scope=10**9)))
    db.close()


def test_write_gate_per_write(benchmark: pytest.FixtureRequest, store: tuple[int, Vault]) -> None:
    """All gate steps (noise, length, PII, duplicate scan of a scope of n/2, capacity)
    for one new ~400-char memory, inside a transaction like the write path."""
    _, vault = store
    draft = MemoryDraft(content=TEXT, type=MemoryType.FACT, agent_id="a0")
    vector = unit(np.random.default_rng(1), 1)[0]

    def run() -> None:
        with vault.service.db.transaction():
            for gate in vault.service.gates:
                assert gate.check(draft, vector, "memory") is None

    benchmark(run)  # type: ignore[operator]


def test_snapshot_build(benchmark: pytest.FixtureRequest, store: tuple[int, Vault]) -> None:
    _, vault = store
    snap = benchmark(vault.snapshot, "a0")  # type: ignore[operator]
    assert snap.canon and snap.registers


def test_pii_scan(benchmark: pytest.FixtureRequest) -> None:
    assert benchmark(find_pii, TEXT) == ()  # type: ignore[operator]


@pytest.mark.parametrize("n", [1_000, 5_000])
def test_consolidation_scan(benchmark: pytest.FixtureRequest, n: int) -> None:
    vectors = unit(np.random.default_rng(2), n)
    benchmark.pedantic(similar_pairs, args=(vectors, 0.85, 100),  # type: ignore[attr-defined]
                       rounds=3)
