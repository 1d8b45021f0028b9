"""Near-duplicate gate over gRPC, and the exact per-scope scan against a naive reference."""

from __future__ import annotations

import numpy as np
from memsidecar.v1 import store_pb2 as s

from sidecar.records import Memory, MemoryType
from sidecar.retrieval.hybrid import HybridRetriever
from sidecar.retrieval.vector.exact import DenseVectors
from sidecar.vault.duplicates import numbers_of
from tests.conftest import Running
from tests.vault.conftest import StartVault, history, stats, upsert

DIM = 384  # synthetic embeddings of the model's size


def test_paraphrase_resolves_to_existing_memory(vault_live: Running) -> None:
    first = upsert(vault_live, "The user prefers dark mode", agent_id="dup").memory
    before = stats(vault_live)
    again = upsert(vault_live, "User prefers the dark mode", agent_id="dup")  # cosine 0.98
    assert again.deduplicated and not again.created
    assert again.memory.id == first.id and again.memory.content == first.content
    after = stats(vault_live)
    assert (after.live, after.history_rows) == (before.live, before.history_rows)
    assert len(history(vault_live, first.id, "dup")) == 1


def test_distinct_memories_are_kept(vault_live: Running) -> None:
    a = upsert(vault_live, "Meeting with the design team at 3pm", agent_id="dup2")
    b = upsert(vault_live, "Meeting with the design team at 4pm", agent_id="dup2")
    c = upsert(vault_live, "The user likes dark themes", agent_id="dup2")
    d = upsert(vault_live, "The user prefers dark mode", agent_id="dup2")  # cosine 0.74 to c
    assert all(r.created and not r.deduplicated for r in (a, b, c, d))


def test_scopes_are_deduplicated_separately(vault_live: Running) -> None:
    shared = upsert(vault_live, "Project Falcon ships in spring").memory
    mine = upsert(vault_live, "Project Falcon ships in spring", agent_id="dup3")
    assert mine.created and mine.memory.id != shared.id
    assert upsert(vault_live, "Project Falcon ships in spring").memory.id == shared.id


def test_forgotten_memory_does_not_block_and_updates_are_not_gated(vault_live: Running) -> None:
    old = upsert(vault_live, "The cat is called Miso", agent_id="dup4").memory
    vault_live.store.ForgetMemory(s.ForgetMemoryRequest(id=old.id, agent_id="dup4"))
    new = upsert(vault_live, "The cat is called Miso", agent_id="dup4")
    assert new.created and new.memory.id != old.id
    # Rewriting a memory by id with its own fields is not a duplicate of itself: a no-op.
    same = upsert(vault_live, "The cat is called Miso", id=new.memory.id, agent_id="dup4")
    assert not same.deduplicated and same.unchanged and same.memory.version == 1
    moved = upsert(vault_live, "The cat is called Miso", id=new.memory.id, agent_id="dup4",
                   importance=0.2)
    assert not moved.deduplicated and moved.memory.version == 2


def test_threshold_is_configurable(start_vault: StartVault) -> None:
    live = start_vault(duplicate_threshold=0.999)
    upsert(live, "The user prefers dark mode")
    assert upsert(live, "User prefers the dark mode").created
    live_off = start_vault(duplicate_gate=False)
    upsert(live_off, "same text")
    assert upsert(live_off, "same text").created


def test_numbers_signal_can_be_switched_off(start_vault: StartVault) -> None:
    live = start_vault(duplicate_numbers_must_match=False)
    first = upsert(live, "imported memory number 1").memory
    assert upsert(live, "imported memory number 2").memory.id == first.id  # cosine 0.967


def test_numbers_of() -> None:
    assert numbers_of("at 3pm on 2024-05-01, v1.2") == {"3", "2024", "05", "01", "1.2"}
    assert numbers_of("no digits") == frozenset()


def _memory(i: int, agent: str, forgotten: bool = False) -> Memory:
    return Memory(id=f"m{i}", content="", type=MemoryType.FACT, importance=0.5, created_at=0,
                  updated_at=0, last_accessed_at=0, access_count=0, source="", channel_id="",
                  agent_id=agent, forgotten=forgotten, version=1, seq=i + 1)


def test_scope_scan_matches_naive_reference() -> None:
    rng = np.random.default_rng(7)
    vectors = rng.normal(size=(300, DIM)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    agents = [["", "a", "b"][i % 3] for i in range(300)]
    engine = HybridRetriever(embedder=None,  # type: ignore[arg-type]
                             vectors=DenseVectors(DIM))
    engine.memories_stored([_memory(i, agents[i]) for i in range(300)], vectors)
    gone = set(range(0, 300, 7))
    engine.memories_forgotten([_memory(i, agents[i]) for i in gone])
    moved = 1  # moves from scope "a" to "b"
    agents[moved] = "b"
    engine.memories_stored([_memory(moved, "b")], vectors[[moved]])
    scopes = engine.scopes
    assert len(engine.live) == 300 - len(gone) and scopes.max_seq == 300
    for agent in ("", "a", "b", "nobody"):
        rows = [i for i in range(300) if agents[i] == agent and i not in gone]
        ids, matrix = scopes.rows(agent)
        assert ids == [f"m{i}" for i in rows]
        np.testing.assert_array_equal(matrix, vectors[rows].reshape(len(rows), DIM))
    for query_row in (3, 50, 299):
        query = vectors[query_row] * 0.9 + vectors[(query_row + 1) % 300] * 0.1
        query /= np.linalg.norm(query)
        for agent in ("", "a", "b", "nobody"):
            expected = sorted(
                ((f"m{i}", float(vectors[i] @ query)) for i in range(300)
                 if agents[i] == agent and i not in gone and vectors[i] @ query >= 0.05),
                key=lambda p: -p[1])
            got = scopes.similar(agent, query, 0.05)
            assert [g[0] for g in got] == [e[0] for e in expected]
            assert np.allclose([g[1] for g in got], [e[1] for e in expected], atol=1e-5)
