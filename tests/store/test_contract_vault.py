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
