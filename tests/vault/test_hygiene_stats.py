"""Hygiene suggestions (consolidation pairs, deletion proposals), VaultStats, config checks."""

from __future__ import annotations

import grpc
import numpy as np
import pytest
from memsidecar.v1 import memory_pb2 as m
from memsidecar.v1 import store_pb2 as s
from memsidecar.v1 import vault_pb2 as v

from sidecar import deadline
from sidecar.config import ConfigError, load_text
from sidecar.errors import DeadlineExceeded, InvalidArgument
from sidecar.knobs import check_ranges
from sidecar.timing import now_us
from sidecar.vault import VaultConfig
from sidecar.vault.hygiene import (
    NEAR_DUPLICATE,
    STALE_LOW_IMPORTANCE,
    SUPERSEDED,
    propose_deletions,
    similar_pairs,
)
from tests.vault.conftest import StartVault, rpc_error, stats, upsert


def test_similar_pairs_match_naive_reference() -> None:
    rng = np.random.default_rng(3)
    base = rng.normal(size=(40, 32)).astype(np.float32)
    rows = base[rng.integers(0, 40, size=1500)] + 0.35 * rng.normal(size=(1500, 32))
    vectors = (rows / np.linalg.norm(rows, axis=1, keepdims=True)).astype(np.float32)
    floor = 0.9
    gram = vectors.astype(np.float64) @ vectors.T.astype(np.float64)
    upper = np.triu(np.ones_like(gram, dtype=bool), k=1)
    expected = set(zip(*np.nonzero(upper & (gram >= floor + 1e-5)), strict=True))
    borderline = set(zip(*np.nonzero(upper & (np.abs(gram - floor) < 1e-5)), strict=True))
    got = similar_pairs(vectors, floor, 10**9)
    assert len(expected) > 100 and any(i < 1024 <= j for i, j in expected)  # tiles crossed
    assert set(expected) <= {(i, j) for i, j, _ in got} <= set(expected) | borderline
    assert all(abs(c - gram[i, j]) < 1e-5 for i, j, c in got)
    assert [c for _, _, c in got] == sorted((c for _, _, c in got), reverse=True)
    assert similar_pairs(vectors, floor, 7) == got[:7]


def test_similar_pairs_stop_when_the_caller_is_gone() -> None:
    vectors = np.eye(3000, 8, dtype=np.float32)
    checks: list[int] = []

    def alive() -> bool:
        checks.append(1)
        return len(checks) < 2

    token = deadline.bind(alive)
    try:
        with pytest.raises(DeadlineExceeded) as info:
            similar_pairs(vectors, 0.0, 1)
    finally:
        deadline.unbind(token)
    assert len(checks) == 2 and info.value.reason == "STOPPED"  # stopped after the 2nd tile
    assert "similar-pairs scan" in info.value.message


def test_consolidation_candidates(start_vault: StartVault) -> None:
    live = start_vault(duplicate_gate=False)
    a = upsert(live, "The user prefers dark mode").memory
    b = upsert(live, "User prefers the dark mode").memory
    c = upsert(live, "The user prefers a dark theme").memory
    upsert(live, "The deploy runs every night")
    upsert(live, "The user prefers dark mode", agent_id="other")  # other scope: never paired
    reply = live.vault.FindConsolidationCandidates(
        v.FindConsolidationCandidatesRequest(floor=0.8))
    pairs = [(p.first.id, p.second.id) for p in reply.pairs]
    cosines = [p.cosine for p in reply.pairs]
    assert pairs[0] == (a.id, b.id) and cosines[0] > 0.95
    assert set(pairs) <= {(a.id, b.id), (a.id, c.id), (b.id, c.id)}
    assert cosines == sorted(cosines, reverse=True) and min(cosines) >= 0.8
    one = live.vault.FindConsolidationCandidates(
        v.FindConsolidationCandidatesRequest(floor=0.8, limit=1))
    assert len(one.pairs) == 1
    none = live.vault.FindConsolidationCandidates(
        v.FindConsolidationCandidatesRequest(scope="other"))
    assert not none.pairs
    err = rpc_error(lambda: live.vault.FindConsolidationCandidates(
        v.FindConsolidationCandidatesRequest(floor=1.5)))
    assert err.code() == grpc.StatusCode.INVALID_ARGUMENT and "floor" in err.details()


def test_propose_deletions_suggests_and_never_deletes(start_vault: StartVault) -> None:
    live = start_vault(duplicate_gate=False, stale_after_days=0, stale_max_importance=0.3)
    old = upsert(live, "The API uses basic auth", type_=m.MEMORY_TYPE_DECISION).memory
    new = upsert(live, "The API moved from basic auth to JWT", type_=m.MEMORY_TYPE_DECISION).memory
    live.store.AddEdge(s.AddEdgeRequest(edge=m.Edge(source_id=new.id, target_id=old.id,
                                                    relation=m.RELATION_UPDATES)))
    keep = upsert(live, "The user prefers dark mode", importance=0.9).memory
    drop = upsert(live, "User prefers the dark mode", importance=0.5).memory
    noise = upsert(live, "Saw a blue car outside", type_=m.MEMORY_TYPE_OBSERVATION).memory
    before = stats(live)
    reply = live.vault.ProposeDeletions(v.ProposeDeletionsRequest())
    found = [(c.memory.id, c.reason, c.related_id) for c in reply.candidates]
    assert found == [
        (old.id, v.DELETION_REASON_SUPERSEDED, new.id),
        (drop.id, v.DELETION_REASON_NEAR_DUPLICATE, keep.id),
        (noise.id, v.DELETION_REASON_STALE_LOW_IMPORTANCE, ""),
    ]
    assert all(c.detail for c in reply.candidates)
    after = stats(live)
    assert (after.live, after.history_rows) == (before.live, before.history_rows)
    assert not live.vault.ProposeDeletions(v.ProposeDeletionsRequest(scope="x")).candidates


def test_propose_deletions_is_bounded_by_its_limit(start_vault: StartVault) -> None:
    live = start_vault(duplicate_gate=False, stale_after_days=0, stale_max_importance=0.3)
    olds = [upsert(live, f"The API uses auth scheme number {i}").memory for i in range(3)]
    for i, old in enumerate(olds):
        new = upsert(live, f"The API moved to auth scheme number {i + 10}").memory
        live.store.AddEdge(s.AddEdgeRequest(edge=m.Edge(source_id=new.id, target_id=old.id,
                                                        relation=m.RELATION_UPDATES)))
    upsert(live, "The user prefers dark mode", importance=0.9)
    upsert(live, "User prefers the dark mode", importance=0.5)
    for i in range(3):
        upsert(live, f"Saw a blue car outside, number {i}", type_=m.MEMORY_TYPE_OBSERVATION)
    app = live.server.app
    vault = app.vault

    def proposals(limit: int) -> list[tuple[str, str]]:
        found = propose_deletions(vault.index, vault.service.memories, vault.repo, "",
                                  vault.config, now_us(), limit)
        return [(c.memory.id, c.reason) for c in found]

    everything = proposals(1000)
    reasons = [r for _, r in everything]
    assert reasons[:3] == [SUPERSEDED] * 3 and NEAR_DUPLICATE in reasons
    assert reasons.count(STALE_LOW_IMPORTANCE) >= 3
    assert reasons == sorted(reasons, key=[SUPERSEDED, NEAR_DUPLICATE,
                                           STALE_LOW_IMPORTANCE].index)
    for limit in range(len(everything) + 1):
        assert proposals(limit) == everything[:limit]
    reply = live.vault.ProposeDeletions(v.ProposeDeletionsRequest())
    assert [c.memory.id for c in reply.candidates] == [i for i, _ in everything]


def test_vault_stats(start_vault: StartVault) -> None:
    live = start_vault()
    upsert(live, "The user is called Sam", type_=m.MEMORY_TYPE_IDENTITY)
    upsert(live, "Focus: parser", tier=m.TIER_REGISTER, topic_id="focus", agent_id="a")
    upsert(live, "Focus: lexer", tier=m.TIER_REGISTER, topic_id="focus", agent_id="a")
    gone = upsert(live, "Sam lives in Oslo", agent_id="a").memory
    live.store.ForgetMemory(s.ForgetMemoryRequest(id=gone.id, agent_id="a"))
    reply = stats(live)
    assert (reply.live, reply.forgotten, reply.register_topics) == (2, 1, 1)
    assert reply.history_rows == 5  # 3 creates, 1 topic update, 1 forget
    assert reply.db_size_bytes > 0 and reply.max_memories_per_scope == 0
    assert [(x.agent_id, x.live, x.forgotten, x.canon, x.registers) for x in reply.scopes] == [
        ("", 1, 0, 1, 0), ("a", 1, 1, 0, 1)]
    assert [(g.agent_id, g.tier, g.type, g.live, g.forgotten) for g in reply.groups] == [
        ("", m.TIER_CANON, m.MEMORY_TYPE_IDENTITY, 1, 0),
        ("a", m.TIER_CANON, m.MEMORY_TYPE_FACT, 0, 1),
        ("a", m.TIER_REGISTER, m.MEMORY_TYPE_FACT, 1, 0),
    ]


@pytest.mark.parametrize("line,key", [
    ("duplicate_threshold = 1.2", "vault.duplicate_threshold"),
    ("max_chars = 0", "vault.max_chars"),
    ("max_memories_per_scope = -1", "vault.max_memories_per_scope"),
    ('noise_phrases = ["ok", " "]', "vault.noise_phrases"),
    ("stale_after_days = -1", "vault.stale_after_days"),
])
def test_config_validation_names_the_key(line: str, key: str) -> None:
    with pytest.raises(ConfigError) as info:
        load_text(f"[vault]\n{line}\n")
    assert info.value.field == key and key in info.value.message
    assert load_text("[vault]\n").vault == VaultConfig()


def test_a_vault_config_given_in_code_is_range_checked() -> None:
    with pytest.raises(InvalidArgument) as info:
        check_ranges(VaultConfig(max_chars=0), "vault")
    assert info.value.field == "vault.max_chars"
    check_ranges(VaultConfig(), "vault")
