"""The store contract, memories, versions and edges: one suite, run on SQLite and PostgreSQL."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from sidecar.errors import InvalidArgument
from sidecar.records import Edge, MemoryType, Relation
from sidecar.store.contract import SqlStore
from sidecar.store.memories import ListQuery
from sidecar.store.repos import Repositories
from sidecar.store.versions import FORGET, UPDATE
from tests.store.contract_data import memory, vector


def test_insert_get_and_embedding_round_trip(store_db: SqlStore) -> None:
    repos = Repositories.open(store_db)
    stored = repos.memories.insert(memory("a", updated_at=2**53), vector(1))
    assert stored.seq > 0 and stored.updated_at == 2**53
    assert repos.memories.get("a") == stored
    assert repos.memories.get("missing") is None
    assert repos.memories.exists("a") and not repos.memories.exists("b")
    got = repos.memories.embedding("a")
    assert got is not None and got.dtype == np.float32
    np.testing.assert_array_equal(got, vector(1))
    many = repos.memories.get_many(["a", "missing"])
    assert list(many) == ["a"]


def test_update_forget_and_versions(store_db: SqlStore) -> None:
    repos = Repositories.open(store_db)
    first = repos.memories.insert(memory("a"), vector(1))
    changed = repos.memories.update(replace(first, content="new", version=2), None)
    assert changed.content == "new" and changed.seq == first.seq
    np.testing.assert_array_equal(repos.memories.embedding("a"), vector(1))  # kept
    repos.memories.update(replace(changed, version=3), vector(2), actor="me")
    np.testing.assert_array_equal(repos.memories.embedding("a"), vector(2))
    repos.memories.update(replace(changed, forgotten=True, version=4), None, event=FORGET)
    history = repos.versions.versions("a")
    assert [(v.version, v.event) for v in history] == [
        (1, "create"), (2, UPDATE), (3, UPDATE), (4, FORGET)]
    assert history[2].actor == "me" and history[1].actor == "test"
    assert repos.versions.count() == 4
    assert repos.memories.count() == 0 and repos.memories.count(include_forgotten=True) == 1


def test_touch_counts_accesses(store_db: SqlStore) -> None:
    repos = Repositories.open(store_db)
    repos.memories.insert(memory("a"), vector(1))
    repos.memories.touch(["a", "a", "missing"], 77)
    got = repos.memories.get("a")
    assert got is not None and got.access_count == 2 and got.last_accessed_at == 77


def test_live_iterators_skip_forgotten_in_seq_order(store_db: SqlStore) -> None:
    repos = Repositories.open(store_db)
    stored = [repos.memories.insert(memory(f"m{i}"), vector(i)) for i in range(7)]
    repos.memories.update(replace(stored[3], forgotten=True, version=2), None)
    batches = list(repos.memories.iter_live_embeddings(batch=2))
    ids = [m.id for memories, _ in batches for m in memories]
    assert ids == ["m0", "m1", "m2", "m4", "m5", "m6"]
    seqs, vectors = zip(*repos.memories.iter_live_vectors(batch=4), strict=True)
    assert np.concatenate(seqs).tolist() == [m.seq for m in stored if m.id != "m3"]
    np.testing.assert_array_equal(np.vstack(vectors)[3], vector(4))


@pytest.mark.parametrize("sort", ["recent", "importance"])
def test_list_pages_filters_and_tokens(store_db: SqlStore, sort: str) -> None:
    repos = Repositories.open(store_db)
    for i in range(9):
        repos.memories.insert(memory(f"m{i}", updated_at=100 + i % 3, importance=i / 10,
                                     agent_id="x" if i % 4 == 0 else ""), vector(i))
    repos.memories.insert(memory("todo", type=MemoryType.TODO, channel_id="c"), vector(99))
    seen: list[str] = []
    token = ""
    while True:
        page, token = repos.memories.list(
            ListQuery(sort=sort, page_size=2, page_token=token, types=(MemoryType.FACT,)))
        seen += [m.id for m in page]
        if not token:
            break
    everything = [m for m in repos.vault.live_in_scope("") if m.type == MemoryType.FACT]
    if sort == "recent":
        expected = sorted(everything, key=lambda m: (m.updated_at, m.seq), reverse=True)
    else:
        expected = sorted(everything, key=lambda m: (m.importance, m.updated_at, m.seq),
                          reverse=True)
    assert seen == [m.id for m in expected]
    mine, _ = repos.memories.list(ListQuery(agent_id="x", page_size=50))
    assert len(mine) == 10
    in_channel, _ = repos.memories.list(ListQuery(channel_id="c"))
    assert [m.id for m in in_channel] == ["todo"]
    with pytest.raises(InvalidArgument, match="page_token"):
        repos.memories.list(ListQuery(sort=sort, page_token="bm90IGEgdG9rZW4"))


def test_edges(store_db: SqlStore) -> None:
    repos = Repositories.open(store_db)
    for name in "abc":
        repos.memories.insert(memory(name), vector(ord(name)))
    repos.edges.upsert(Edge("a", "b", Relation.UPDATES, 0.5, 10))
    again = repos.edges.upsert(Edge("a", "b", Relation.UPDATES, 0.9, 11))
    assert again.weight == 0.9 and again.created_at == 10
    repos.edges.upsert(Edge("c", "a", Relation.RELATED_TO))
    assert repos.edges.count() == 2 and len(repos.edges.all()) == 2
    assert {(e.source_id, e.target_id) for e in repos.edges.touching(["b"])} == {("a", "b")}
    assert len(repos.edges.touching(["a"])) == 2 and repos.edges.touching([]) == []
    assert repos.edges.remove("a", "b", Relation.UPDATES)
    assert not repos.edges.remove("a", "b", Relation.UPDATES)
    assert repos.edges.get("a", "b", Relation.UPDATES) is None


def test_transactions_commit_roll_back_and_nest(store_db: SqlStore) -> None:
    repos = Repositories.open(store_db)
    with pytest.raises(RuntimeError), store_db.transaction():
        repos.memories.insert(memory("gone"), vector(1))
        raise RuntimeError("roll back")
    assert not repos.memories.exists("gone")
    with store_db.transaction():
        repos.memories.insert(memory("kept"), vector(2))
        with pytest.raises(RuntimeError), store_db.transaction():  # a savepoint
            repos.memories.insert(memory("inner"), vector(3))
            raise RuntimeError("roll back the savepoint only")
    assert repos.memories.exists("kept") and not repos.memories.exists("inner")
    store_db.execute("UPDATE memories SET importance = ? WHERE id = ?", (0.25, "kept"))
    assert store_db.changes() == 1
    assert store_db.size_bytes() > 0
