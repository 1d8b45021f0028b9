"""The store contract, vault and model queries: one suite, run on SQLite and PostgreSQL."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np
import pytest

from sidecar.errors import InvalidArgument
from sidecar.records import Edge, MemoryDraft, MemoryType, Relation, Tier
from sidecar.store.contract import SqlStore
from sidecar.store.model_repo import MODEL_KEY, TARGET_KEY
from sidecar.store.repos import Repositories
from sidecar.store.versions import FORGET
from sidecar.vault.stats import vault_stats
from tests.store.contract_data import memory, vector


def test_rows_after_a_seq_are_those_of_the_writers_scopes(store_db: SqlStore) -> None:
    repos = Repositories.open(store_db)
    old = repos.memories.insert(memory("g1", agent_id="x"), vector(1))
    for n, (agent, user) in enumerate([("x", ""), ("x", "u1"), ("x", "u2"), ("y", "u1")]):
        repos.memories.insert(replace(memory(f"m{n}"), agent_id=agent, user_id=user),
                              vector(n + 2))
    assert [i for _, i in repos.vault.live_after(old.seq, "x", "u1")] == ["m0", "m1"]
    assert [i for _, i in repos.vault.live_after(old.seq, "x")] == ["m0"]  # no user's
    assert [i for _, i in repos.vault.live_after(0, "y", "u1")] == ["m3"]


def test_registers_scopes_and_counts(store_db: SqlStore) -> None:
    repos = Repositories.open(store_db)
    old = repos.memories.insert(memory("r1", agent_id="x", tier=Tier.REGISTER, topic_id="t",
                                       updated_at=1), vector(1))
    repos.memories.insert(memory("r2", agent_id="x", tier=Tier.REGISTER, topic_id="t",
                                 updated_at=2), vector(2))
    repos.memories.insert(memory("r3", agent_id="", tier=Tier.REGISTER, topic_id="t"), vector(3))
    repos.memories.insert(memory("c1", agent_id="y", importance=0.9), vector(4))
    def register(agent: str, topic: str = "t", user: str = "") -> MemoryDraft:
        return MemoryDraft("x", MemoryType.FACT, agent_id=agent, tier=Tier.REGISTER,
                           topic_id=topic, user_id=user)

    live = repos.vault.live_register(register("x"))
    assert live is not None and live.id == "r2"
    assert repos.vault.live_register(register("y")) is None
    assert repos.vault.live_register(register("x", user="u1")) is None  # a user's own topics
    assert repos.vault.count_live("x") == 2 and repos.vault.count_live("") == 1
    assert repos.vault.register_topics() == 2  # (x, t) and ('', t)
    assert [s for s, _ in repos.vault.live_after(old.seq, "x")] == [old.seq + 1]
    by_seq = repos.vault.embeddings_by_seq([old.seq, 10**9])
    np.testing.assert_array_equal(by_seq[old.seq], vector(1))
    assert list(by_seq) == [old.seq]
    assert [m.id for m in repos.vault.visible_tier("x", Tier.REGISTER, "recent", 10)] == [
        "r2", "r3", "r1"]
    assert [m.id for m in repos.vault.live_in_scope("x")] == ["r1", "r2"]
    assert (("x", int(Tier.REGISTER), 6, False, 2) in repos.vault.counts("x", "x"))
    assert {r[0] for r in repos.vault.counts("", "")} == {""}


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
    for n, user in enumerate(["u2", "u1", "u1"], start=6):  # end users of agent c
        repos.memories.insert(replace(memory(f"m{n}", agent_id="c"), user_id=user), vector(n))
    gone = repos.memories.get("m1")
    assert gone is not None
    repos.memories.update(replace(gone, forgotten=True, version=2), None)
    a, b, c = ("a", 1, 0, 1, 0, 0, 0), ("b", 1, 1, 0, 1, 0, 0), ("c", 4, 0, 4, 0, 2, 3)
    shared = ("", 1, 0, 1, 0, 0, 0)
    assert repos.vault.scope_counts(None, None, 2) == [shared, a]
    assert repos.vault.scope_counts("a", None, 2) == [b, c]
    assert repos.vault.scope_counts("", None, 1) == [a]
    assert repos.vault.scope_counts(None, "c", 2) == [a, b]
    assert repos.vault.scope_counts(None, "a", 5) == [shared]
    assert repos.vault.scope_counts("d", None, 5) == []
    assert repos.vault.totals() == (8, 1, 5)
    assert repos.vault.user_counts("c", 5) == [("u1", 2, 0), ("u2", 1, 0)]
    assert repos.vault.user_counts("c", 1) == [("u1", 2, 0)]
    assert repos.vault.user_counts("a", 5) == []


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


def test_vault_stats_pages_cover_every_scope_once_reading_only_the_page(
        store_db: SqlStore, monkeypatch: pytest.MonkeyPatch) -> None:
    repos = Repositories.open(store_db)
    agents = [""] + [f"agent-{i:03d}" for i in range(250)]
    expected: dict[str, list[int]] = {}  # agent -> [live, forgotten, canon, registers]
    with store_db.transaction():
        for i, agent in enumerate(agents):
            tier = Tier.REGISTER if i % 3 == 0 else Tier.CANON
            stored = repos.memories.insert(memory(f"m{i}", agent_id=agent, tier=tier), vector(i))
            if i % 4 == 0:
                repos.memories.update(replace(stored, forgotten=True, version=2), None,
                                      event=FORGET)
            gone = i % 4 == 0
            expected[agent] = [int(not gone), int(gone), int(not gone and tier == Tier.CANON),
                               int(not gone and tier == Tier.REGISTER)]
    largest: list[int] = []
    execute = store_db.execute

    def spy(sql: str, params: Any = ()) -> list[Any]:
        rows = execute(sql, params)
        largest.append(len(rows))
        return rows

    monkeypatch.setattr(store_db, "execute", spy)
    seen: list[str] = []
    token, pages = "", 0
    while True:
        page = vault_stats(repos, 0, 100, token)
        pages += 1
        assert (page.live, page.forgotten) == (188, 63)  # whole-store totals on every page
        assert [[s.live, s.forgotten, s.canon, s.registers] for s in page.scopes] == [
            expected[s.agent_id] for s in page.scopes]
        assert {g.agent_id for g in page.groups} == {s.agent_id for s in page.scopes}
        assert sum(g.live + g.forgotten for g in page.groups) == len(page.scopes)
        seen.extend(s.agent_id for s in page.scopes)
        token = page.next_page_token
        if not token:
            break
    assert pages == 3 and seen == agents  # each scope once, in agent_id order, "" first
    assert max(largest) <= 101  # no query read more than a page (+1 to see a next one)
    good = repos.vault.scope_token("agent-099")
    assert [s.agent_id for s in vault_stats(repos, 0, 1, good).scopes] == ["agent-100"]
    listed = repos.memories.page_tokens.encode("stored", [5])  # a ListMemories token
    for bad in (good + "0", good[:-1], listed, "not a token"):
        with pytest.raises(InvalidArgument) as info:
            vault_stats(repos, 0, 100, bad)
        assert info.value.field == "page_token" and "VaultStats" in info.value.message


def test_history_returns_the_latest_versions_oldest_first(store_db: SqlStore) -> None:
    repos = Repositories.open(store_db)
    stored = repos.memories.insert(memory("h", agent_id="a"), vector(1))
    for n in range(2, 13):
        stored = repos.memories.update(replace(stored, content=f"text {n}", version=n,
                                               agent_id="a" if n < 10 else ""), None)
    versions, total = repos.versions.history("h", "", 5)
    assert total == 12 and [v.version for v in versions] == [8, 9, 10, 11, 12]
    versions, total = repos.versions.history("h", "b", 100)  # b sees the shared ones only
    assert total == 3 and [v.version for v in versions] == [10, 11, 12]
    versions, total = repos.versions.history("h", "a", 2)
    assert total == 12 and [v.version for v in versions] == [11, 12]
    assert repos.versions.history("nope", "", 5) == ([], 0)
