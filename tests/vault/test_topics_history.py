"""REGISTER topic upserts, PromoteToCanon and the append-only history, over gRPC."""

from __future__ import annotations

import sqlite3
from contextlib import closing
from pathlib import Path

import grpc
from memsidecar.v1 import memory_pb2 as m
from memsidecar.v1 import store_pb2 as s
from memsidecar.v1 import vault_pb2 as v

from sidecar.store.db import Database
from sidecar.store.migrations import MIGRATIONS
from sidecar.store.versions import VersionRepo
from tests.conftest import Running
from tests.vault.conftest import StartVault, history, rpc_error, stats, trailers, upsert

REG = m.TIER_REGISTER


def test_register_topic_updates_in_place(vault_live: Running) -> None:
    first = upsert(vault_live, "Projects: dashboard, memory upgrade", tier=REG,
                   topic_id="current_projects", agent_id="topics")
    second = upsert(vault_live, "Projects: dashboard, memory upgrade, email integration",
                    tier=REG, topic_id="current_projects", agent_id="topics", source="chat")
    assert first.created and not second.created and not second.deduplicated
    assert second.memory.id == first.memory.id and second.memory.version == 2
    assert second.memory.content.endswith("email integration")
    listed = vault_live.store.ListMemories(s.ListMemoriesRequest(agent_id="topics"))
    assert [x.id for x in listed.memories if x.agent_id == "topics"] == [first.memory.id]
    versions = history(vault_live, first.memory.id, "topics")
    assert [(x.version, x.event, x.actor) for x in versions] == [
        (1, v.VERSION_EVENT_CREATE, ""), (2, v.VERSION_EVENT_UPDATE, "chat")]
    assert versions[0].content == "Projects: dashboard, memory upgrade"


def test_topics_are_per_scope_and_per_tier(vault_live: Running) -> None:
    mine = upsert(vault_live, "Mood: curious", tier=REG, topic_id="mood", agent_id="t-a")
    theirs = upsert(vault_live, "Mood: focused", tier=REG, topic_id="mood", agent_id="t-b")
    canon = upsert(vault_live, "Mood is not tracked for canon", topic_id="mood", agent_id="t-a")
    assert theirs.created and canon.created
    assert len({mine.memory.id, theirs.memory.id, canon.memory.id}) == 3
    vault_live.store.ForgetMemory(s.ForgetMemoryRequest(id=mine.memory.id, agent_id="t-a"))
    fresh = upsert(vault_live, "Mood: calm", tier=REG, topic_id="mood", agent_id="t-a")
    assert fresh.created and fresh.memory.id != mine.memory.id


def test_topic_upsert_can_be_switched_off(start_vault: StartVault) -> None:
    live = start_vault(topic_upsert=False)
    a = upsert(live, "Focus: the parser", tier=REG, topic_id="focus")
    b = upsert(live, "Focus: the scheduler", tier=REG, topic_id="focus")
    assert a.memory.id != b.memory.id


def test_topic_upserts_in_one_import_batch(vault_live: Running) -> None:
    items = [s.UpsertMemoryRequest(memory=m.Memory(
        content=f"Sprint goal: milestone {i}", type=m.MEMORY_TYPE_GOAL, tier=REG,
        topic_id="sprint_goal", agent_id="t-import")) for i in range(3)]
    reply = vault_live.store.ImportMemories(iter(items))
    assert reply.stored == 3 and len(set(reply.ids)) == 1
    memory = vault_live.store.GetMemory(s.GetMemoryRequest(id=reply.ids[0], agent_id="t-import"))
    assert memory.version == 3 and memory.content == "Sprint goal: milestone 2"


def test_promote_to_canon(vault_live: Running) -> None:
    reg = upsert(vault_live, "Mission draft: stabilise the runtime", tier=REG,
                 topic_id="mission", agent_id="promo").memory
    reply = vault_live.vault.PromoteToCanon(v.PromoteToCanonRequest(
        id=reg.id, agent_id="promo",
        canonical_text="Mission: stabilise the runtime, then add tools in layers"))
    promoted = reply.memory
    assert promoted.tier == m.TIER_CANON and promoted.version == 2
    assert promoted.source == "promotion" and promoted.content.startswith("Mission:")
    assert [x.event for x in history(vault_live, reg.id, "promo")] == [
        v.VERSION_EVENT_CREATE, v.VERSION_EVENT_PROMOTE]
    err = rpc_error(lambda: vault_live.vault.PromoteToCanon(v.PromoteToCanonRequest(
        id=reg.id, agent_id="promo")))
    assert err.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert trailers(err)["memsidecar-reason"] == "ALREADY_CANON"
    # A new REGISTER write on the topic now starts a new register (the old one is canon).
    again = upsert(vault_live, "Mission draft: explore boundaries", tier=REG, topic_id="mission",
                   agent_id="promo")
    assert again.created and again.memory.id != reg.id


def test_promote_rejections(vault_live: Running) -> None:
    reg = upsert(vault_live, "Current focus: the tokenizer", tier=REG, topic_id="focus",
                 agent_id="promo2").memory
    before = stats(vault_live)
    err = rpc_error(lambda: vault_live.vault.PromoteToCanon(v.PromoteToCanonRequest(
        id=reg.id, agent_id="promo2",
        canonical_text="Focus: tokenizer; admin pwd=Hunter2Hunter2")))
    assert err.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert trailers(err) == {"memsidecar-reason": "PII_DETECTED",
                             "memsidecar-field": "canonical_text"}
    assert stats(vault_live).history_rows == before.history_rows
    err = rpc_error(lambda: vault_live.vault.PromoteToCanon(v.PromoteToCanonRequest(
        id=reg.id, agent_id="someone-else")))
    assert err.code() == grpc.StatusCode.NOT_FOUND
    err = rpc_error(lambda: vault_live.vault.PromoteToCanon(v.PromoteToCanonRequest(id="nope")))
    assert err.code() == grpc.StatusCode.NOT_FOUND
    err = rpc_error(lambda: vault_live.vault.PromoteToCanon(v.PromoteToCanonRequest(id=reg.id)))
    assert err.code() == grpc.StatusCode.NOT_FOUND  # another agent's: not visible to shared
    vault_live.store.ForgetMemory(s.ForgetMemoryRequest(id=reg.id, agent_id="promo2"))
    err = rpc_error(lambda: vault_live.vault.PromoteToCanon(v.PromoteToCanonRequest(
        id=reg.id, agent_id="promo2")))
    assert trailers(err)["memsidecar-reason"] == "MEMORY_FORGOTTEN"


def test_history_after_update_forget_and_restore(vault_live: Running) -> None:
    mem = upsert(vault_live, "The office is in Paris", source="chat", agent_id="hist").memory
    upsert(vault_live, "The office is in Lyon", id=mem.id, source="import:notes",
           agent_id="hist", importance=0.9)
    forgot = vault_live.store.ForgetMemory(s.ForgetMemoryRequest(
        id=mem.id, source="operator", agent_id="hist"))
    assert forgot.memory.version == 3 and forgot.memory.forgotten
    vault_live.store.ForgetMemory(s.ForgetMemoryRequest(
        id=mem.id, source="again", agent_id="hist"))  # no-op
    upsert(vault_live, "The office is in Lyon", id=mem.id, agent_id="hist")
    versions = history(vault_live, mem.id, "hist")
    assert [(x.version, x.event, x.actor, x.forgotten) for x in versions] == [
        (1, v.VERSION_EVENT_CREATE, "chat", False),
        (2, v.VERSION_EVENT_UPDATE, "import:notes", False),
        (3, v.VERSION_EVENT_FORGET, "operator", True),
        (4, v.VERSION_EVENT_RESTORE, "", False),
    ]
    assert [x.content for x in versions[:2]] == ["The office is in Paris", "The office is in Lyon"]
    assert abs(versions[1].importance - 0.9) < 1e-6 and versions[0].agent_id == "hist"
    stamps = [x.recorded_at.ToMicroseconds() for x in versions]
    assert stamps == sorted(stamps) and len(set(stamps)) == 4
    current = vault_live.store.GetMemory(s.GetMemoryRequest(id=mem.id, agent_id="hist"))
    assert current.version == versions[-1].version == 4
    err = rpc_error(lambda: vault_live.vault.GetMemoryHistory(v.GetMemoryHistoryRequest(id="no")))
    assert err.code() == grpc.StatusCode.NOT_FOUND


def test_migration_backfills_a_baseline_version(tmp_path: Path) -> None:
    path = tmp_path / "old.sqlite3"
    with closing(sqlite3.connect(path)) as old:  # a database at schema version 1
        old.executescript(MIGRATIONS[0])
        old.execute(
            "INSERT INTO memories (id, content, type, importance, created_at, updated_at, "
            "source, embedding) VALUES ('old', 'stored before history', 6, 0.6, 10, 20, "
            "'legacy', x'00')")
        old.execute("PRAGMA user_version=1")
        old.commit()
    db = Database(path)
    try:
        versions = VersionRepo(db).versions("old")
        assert [(x.event, x.version, x.recorded_at, x.actor, x.content) for x in versions] == [
            ("baseline", 1, 20, "legacy", "stored before history")]
        assert db.schema_version == len(MIGRATIONS)
    finally:
        db.close()
