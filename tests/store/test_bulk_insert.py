"""The bulk load path (memories with their first versions, edges) against one insert at a time:
the same rows, on SQLite and PostgreSQL."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from sidecar.records import Edge, Memory, Relation
from sidecar.store.contract import SqlStore
from sidecar.store.repos import Repositories
from sidecar.store.versions import CREATE, MemoryVersion
from tests.store.contract_data import memory, vector

Rows = list[tuple[Memory, list[float], list[MemoryVersion]]]


def rows(repos: Repositories, ids: list[str]) -> Rows:
    """Each memory (seq aside), its embedding and its versions."""
    out: Rows = []
    for memory_id in ids:
        stored = repos.memories.get(memory_id)
        assert stored is not None
        embedding = repos.memories.embedding(memory_id)
        assert embedding is not None
        out.append((replace(stored, seq=0), embedding.tolist(),
                    repos.versions.versions(memory_id)))
    return out


def test_insert_many_writes_what_insert_writes(store_db: SqlStore) -> None:
    repos = Repositories.open(store_db)
    batch = [replace(memory(f"bulk{i}", updated_at=10 + i, agent_id="agent-1"),
                     user_id="user-1" if i % 2 else "", source=f"src{i % 3}")
             for i in range(5)]
    vectors = np.stack([vector(i) for i in range(5)])
    repos.memories.insert_many(batch, vectors)
    for m, v in zip(batch, vectors, strict=True):
        repos.memories.insert(replace(m, id=f"one{m.id}"), v)
    bulk = rows(repos, [m.id for m in batch])
    one = [(replace(m, id=m.id[3:]), e, [replace(v, memory_id=v.memory_id[3:]) for v in h])
           for m, e, h in rows(repos, [f"one{m.id}" for m in batch])]
    assert bulk == one
    assert [v.event for _, _, h in bulk for v in h] == [CREATE] * 5
    seqs = [repos.memories.get(m.id).seq for m in batch]  # type: ignore[union-attr]
    assert seqs == sorted(seqs)  # in the order given


def test_upsert_many_writes_what_upsert_writes(store_db: SqlStore) -> None:
    repos = Repositories.open(store_db)
    repos.memories.insert_many([memory(x) for x in "abc"], np.stack([vector(i) for i in range(3)]))
    edges = [Edge("a", "b", Relation.RELATED_TO, 0.7, 5), Edge("b", "c", Relation.UPDATES, 0.4, 6)]
    repos.edges.upsert_many(edges)
    assert sorted(repos.edges.all(), key=lambda e: e.source_id) == edges
    repos.edges.upsert_many([replace(edges[0], weight=0.9)])  # an existing edge: reweighted
    assert repos.edges.get("a", "b", Relation.RELATED_TO) == replace(edges[0], weight=0.9)
    assert repos.edges.count() == 2
