"""The store contract, vault and model queries: one suite, run on SQLite and PostgreSQL."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from sidecar.records import Edge, Relation, Tier
from sidecar.store.contract import SqlStore
from sidecar.store.model_repo import MODEL_KEY, TARGET_KEY
from sidecar.store.repos import Repositories
from tests.store.contract_data import memory, vector


def test_registers_scopes_and_counts(store_db: SqlStore) -> None:
    repos = Repositories.open(store_db)
    old = repos.memories.insert(memory("r1", agent_id="x", tier=Tier.REGISTER, topic_id="t",
                                       updated_at=1), vector(1))
    repos.memories.insert(memory("r2", agent_id="x", tier=Tier.REGISTER, topic_id="t",
                                 updated_at=2), vector(2))
    repos.memories.insert(memory("r3", agent_id="", tier=Tier.REGISTER, topic_id="t"), vector(3))
    repos.memories.insert(memory("c1", agent_id="y", importance=0.9), vector(4))
    live = repos.vault.live_register("x", "t")
    assert live is not None and live.id == "r2"
    assert repos.vault.live_register("y", "t") is None
    assert repos.vault.count_live("x") == 2 and repos.vault.count_live("") == 1
    assert repos.vault.register_topics() == 2  # (x, t) and ('', t)
    assert [s for s, _ in repos.vault.live_after(old.seq, "x")] == [old.seq + 1]
    by_seq = repos.vault.embeddings_by_seq([old.seq, 10**9])
    np.testing.assert_array_equal(by_seq[old.seq], vector(1))
    assert list(by_seq) == [old.seq]
    assert [m.id for m in repos.vault.visible_tier("x", Tier.REGISTER, "recent", 10)] == [
        "r2", "r3", "r1"]
    assert [m.id for m in repos.vault.live_in_scope("x")] == ["r1", "r2"]
    assert (("x", int(Tier.REGISTER), 6, False, 2) in repos.vault.counts())


def test_superseded_follows_live_updates_edges(store_db: SqlStore) -> None:
    repos = Repositories.open(store_db)
    for name in ("old", "new", "dead"):
        repos.memories.insert(memory(name), vector(len(name)))
    repos.edges.upsert(Edge("new", "old", Relation.UPDATES))
    repos.edges.upsert(Edge("dead", "new", Relation.UPDATES))
    dead = repos.memories.get("dead")
    assert dead is not None
    repos.memories.update(replace(dead, forgotten=True, version=2), None)
    assert repos.vault.superseded(["old", "new"]) == {"old": "new"}


def test_model_records_and_reembed_staging(store_db: SqlStore) -> None:
    repos = Repositories.open(store_db)
    a = repos.memories.insert(memory("a"), vector(1))
    b = repos.memories.insert(memory("b"), vector(2))
    repos.models.set(MODEL_KEY, "old")
    repos.models.set(MODEL_KEY, "m1")
    assert repos.models.get(MODEL_KEY) == "m1"
    repos.models.start_target("m2")
    assert repos.models.get(TARGET_KEY) == "m2"
    assert [seq for seq, _, _ in repos.models.pending(10)] == [a.seq, b.seq]
    repos.models.stage([(a.seq, 1)], vector(10)[None, :])
    repos.models.stage([(a.seq, 1)], vector(11)[None, :])  # restaged: replaced
    assert repos.models.progress() == (1, 2)
    repos.models.stage([(b.seq, 1)], vector(12)[None, :])
    assert repos.models.pending(10) == []
    repos.models.swap("m2")
    assert repos.models.get(MODEL_KEY) == "m2" and repos.models.get(TARGET_KEY) is None
    np.testing.assert_array_equal(repos.memories.embedding("a"), vector(11))
    np.testing.assert_array_equal(repos.memories.embedding("b"), vector(12))
    assert repos.models.progress() == (0, 2)


def test_scope_pages_and_totals(store_db: SqlStore) -> None:
    repos = Repositories.open(store_db)
    for n, agent in enumerate(["", "b", "a", "c", "b", "d"]):
        repos.memories.insert(memory(f"m{n}", agent_id=agent,
                                     tier=Tier.REGISTER if n == 4 else Tier.CANON), vector(n))
    gone = repos.memories.get("m1")
    assert gone is not None
    repos.memories.update(replace(gone, forgotten=True, version=2), None)
    assert repos.vault.scope_counts(None, None, 2) == [("", 1, 0, 1, 0), ("a", 1, 0, 1, 0)]
    assert repos.vault.scope_counts("a", None, 2) == [("b", 1, 1, 0, 1), ("c", 1, 0, 1, 0)]
    assert repos.vault.scope_counts("", None, 1) == [("a", 1, 0, 1, 0)]
    assert repos.vault.scope_counts(None, "c", 2) == [("a", 1, 0, 1, 0), ("b", 1, 1, 0, 1)]
    assert repos.vault.scope_counts(None, "a", 5) == [("", 1, 0, 1, 0)]
    assert repos.vault.scope_counts("d", None, 5) == []
    assert repos.vault.totals() == (5, 1, 5)


def test_superseded_and_stale_in_scope_are_limited(store_db: SqlStore) -> None:
    repos = Repositories.open(store_db)
    for name, agent, at, importance in [("o1", "x", 1, 0.2), ("o2", "x", 2, 0.9),
                                        ("n1", "x", 5, 0.9), ("n2", "x", 6, 0.9),
                                        ("n3", "y", 7, 0.9), ("s1", "x", 3, 0.3),
                                        ("s2", "y", 3, 0.3)]:
        repos.memories.insert(memory(name, agent_id=agent, updated_at=at, importance=importance),
                              vector(at))
    repos.edges.upsert(Edge("n1", "o1", Relation.UPDATES))
    repos.edges.upsert(Edge("n2", "o1", Relation.UPDATES))  # the newer successor is named
    repos.edges.upsert(Edge("n3", "o2", Relation.UPDATES))  # another scope's successor counts
    found = [(m.id, s) for m, s in repos.vault.superseded_in_scope("x", 10)]
    assert found == [("o1", "n2"), ("o2", "n3")]
    assert [m.id for m, _ in repos.vault.superseded_in_scope("x", 1)] == ["o1"]
    assert repos.vault.superseded_in_scope("y", 10) == []
    assert [m.id for m in repos.vault.stale_in_scope("x", 0.3, 4, 10)] == ["o1", "s1"]
    assert [m.id for m in repos.vault.stale_in_scope("x", 0.3, 3, 10)] == ["o1"]
    assert [m.id for m in repos.vault.stale_in_scope("x", 0.3, 4, 1)] == ["o1"]


def test_latest_versions_and_limited_edges(store_db: SqlStore) -> None:
    repos = Repositories.open(store_db)
    first = repos.memories.insert(memory("a"), vector(1))
    for version in range(2, 5):
        repos.memories.update(replace(first, content=f"v{version}", version=version), None)
    versions, total = repos.versions.latest("a", 2)
    assert total == len(repos.versions.versions("a")) and [v.version for v in versions] == [
        total, total - 1]
    for name in ("b", "c", "d"):
        repos.memories.insert(memory(name), vector(len(name) + 5))
        repos.edges.upsert(Edge("a", name, Relation.RELATED_TO))
    assert len(repos.edges.touching(["a"], 2)) == 2 and len(repos.edges.touching(["a"])) == 3
