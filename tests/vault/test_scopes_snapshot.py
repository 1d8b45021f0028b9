"""Scope isolation through every read that exists today, and the snapshot's content."""

from __future__ import annotations

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc
from memsidecar.v1 import memory_pb2 as m
from memsidecar.v1 import store_pb2 as s
from memsidecar.v1 import vault_pb2 as v

from sidecar.records import Memory, MemoryType, Tier
from sidecar.vault.snapshot import render_snapshot
from tests.conftest import Running
from tests.vault.conftest import StartVault, history, rpc_error, upsert

REG = m.TIER_REGISTER


def test_agents_never_read_each_other(vault_live: Running) -> None:
    secret = upsert(vault_live, "Alice's private plan: learn the cello", agent_id="alice",
                    type_=m.MEMORY_TYPE_GOAL).memory
    shared = upsert(vault_live, "The team meets on Mondays", type_=m.MEMORY_TYPE_FACT).memory
    bob = upsert(vault_live, "Bob's focus: the parser", agent_id="bob", tier=REG,
                 topic_id="focus").memory
    err = rpc_error(lambda: vault_live.store.GetMemory(
        s.GetMemoryRequest(id=secret.id, agent_id="bob")))
    assert err.code() == grpc.StatusCode.NOT_FOUND and "alice" not in err.details().lower()
    listed = vault_live.store.ListMemories(s.ListMemoriesRequest(agent_id="bob", page_size=1000))
    ids = {x.id for x in listed.memories}
    assert bob.id in ids and shared.id in ids and secret.id not in ids
    assert all(x.agent_id in ("", "bob") for x in listed.memories)
    err = rpc_error(lambda: vault_live.vault.GetMemoryHistory(
        v.GetMemoryHistoryRequest(id=secret.id, agent_id="bob")))
    assert err.code() == grpc.StatusCode.NOT_FOUND
    snap = vault_live.vault.GetSnapshot(v.GetSnapshotRequest(agent_id="bob"))
    snap_ids = {x.id for x in [*snap.canon, *snap.registers]}
    assert secret.id not in snap_ids and "cello" not in snap.text
    assert bob.id in snap_ids and shared.id in snap_ids
    alice = vault_live.vault.GetSnapshot(v.GetSnapshotRequest(agent_id="alice"))
    assert secret.id in {x.id for x in alice.canon} and "Bob" not in alice.text
    shared_only = vault_live.vault.GetSnapshot(v.GetSnapshotRequest())
    assert {x.agent_id for x in [*shared_only.canon, *shared_only.registers]} == {""}


def test_a_memory_keeps_its_scope(vault_live: Running) -> None:
    mem = upsert(vault_live, "Draft: carol's salary review notes", agent_id="carol").memory
    for agent in ("", "dave"):  # neither shared nor another agent's scope can take it over
        err = rpc_error(lambda a=agent: upsert(
            vault_live, "Salary reviews happen in March", id=mem.id, agent_id=a))
        assert err.code() == grpc.StatusCode.PERMISSION_DENIED and "memory.id" in err.details()
        err = rpc_error(lambda a=agent: history(vault_live, mem.id, a))
        assert err.code() == grpc.StatusCode.NOT_FOUND
    assert [x.version for x in history(vault_live, mem.id, "carol")] == [1]


def test_bad_agent_id_is_invalid_argument(vault_live: Running) -> None:
    err = rpc_error(lambda: vault_live.vault.GetSnapshot(v.GetSnapshotRequest(agent_id="x\ny")))
    assert err.code() == grpc.StatusCode.INVALID_ARGUMENT and "agent_id" in err.details()


def test_snapshot_content_and_order(start_vault: StartVault) -> None:
    live = start_vault(snapshot_canon_limit=2, snapshot_register_limit=2)
    upsert(live, "The user is called Sam", type_=m.MEMORY_TYPE_IDENTITY)  # importance 1.0
    upsert(live, "Sam writes Rust at work", type_=m.MEMORY_TYPE_FACT)  # 0.6
    upsert(live, "Sam's goal: run a marathon", type_=m.MEMORY_TYPE_GOAL, agent_id="coach")  # 0.9
    upsert(live, "Registers need a topic", tier=REG)  # no topic: not an active register
    upsert(live, "Focus: parser", tier=REG, topic_id="focus")
    upsert(live, "Mood: upbeat", tier=REG, topic_id="mood")
    upsert(live, "Plan: taper week", tier=REG, topic_id="plan", agent_id="coach")
    upsert(live, "Focus: scheduler", tier=REG, topic_id="focus")  # topic update, newest
    forgotten = upsert(live, "Sam is the admin", type_=m.MEMORY_TYPE_IDENTITY).memory
    live.store.ForgetMemory(s.ForgetMemoryRequest(id=forgotten.id))
    snap = live.vault.GetSnapshot(v.GetSnapshotRequest(agent_id="coach"))
    assert [x.content for x in snap.canon] == ["The user is called Sam",
                                               "Sam's goal: run a marathon"]
    assert [x.content for x in snap.registers] == ["Focus: scheduler", "Plan: taper week"]
    assert snap.text == "\n".join([
        "[Snapshot from memory]",
        "Canon:",
        "- (identity) The user is called Sam",
        "- (goal) Sam's goal: run a marathon",
        "Registers:",
        "- [focus] Focus: scheduler",
        "- [plan] Plan: taper week",
    ])
    assert snap.omitted == 0
    empty = live.vault.GetSnapshot(v.GetSnapshotRequest(agent_id="nobody-new"))
    assert [x.content for x in empty.registers] == ["Focus: scheduler", "Mood: upbeat"]


def _mem(i: int, content: str, tier: Tier, topic: str = "") -> Memory:
    return Memory(id=f"m{i}", content=content, type=MemoryType.FACT, importance=0.6,
                  created_at=i, updated_at=i, last_accessed_at=0, access_count=0, source="",
                  channel_id="", agent_id="", forgotten=False, version=1, tier=tier,
                  topic_id=topic, seq=i)


def test_snapshot_character_budget() -> None:
    canon = [_mem(1, "a" * 50, Tier.CANON), _mem(2, "b" * 500, Tier.CANON),
             _mem(3, "c  \n c", Tier.CANON)]
    registers = [_mem(4, "d" * 30, Tier.REGISTER, "t")]
    full = render_snapshot("", canon, registers, 10_000)
    assert full.omitted == 0 and "- (fact) c c" in full.text  # whitespace folded
    for budget in (60, 120, 200, 700):
        snap = render_snapshot("", canon, registers, budget)
        assert len(snap.text) <= budget
        assert len(snap.memories) + snap.omitted == 4
    small = render_snapshot("", canon, registers, 200)
    assert [x.id for x in small.memories] == ["m1", "m3", "m4"] and small.omitted == 1
    assert render_snapshot("", [], [], 100).text == ""


def test_vault_service_is_healthy_and_reflected(vault_live: Running) -> None:
    health = health_pb2_grpc.HealthStub(vault_live.channel)
    reply = health.Check(health_pb2.HealthCheckRequest(service="memsidecar.v1.Vault"))
    assert reply.status == health_pb2.HealthCheckResponse.SERVING
    reflect = reflection_pb2_grpc.ServerReflectionStub(vault_live.channel)
    request = reflection_pb2.ServerReflectionRequest(list_services="")
    listed = next(iter(reflect.ServerReflectionInfo(iter([request]))))
    assert "memsidecar.v1.Vault" in {s.name for s in listed.list_services_response.service}
