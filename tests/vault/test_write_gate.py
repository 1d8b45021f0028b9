"""The write gate over real gRPC: each step rejects with its code, reason and field, lets
ordinary text through, and a rejected write changes nothing."""

from __future__ import annotations

import logging

import grpc
import pytest
from memsidecar.v1 import memory_pb2 as m
from memsidecar.v1 import store_pb2 as s

from tests.conftest import Running
from tests.vault.conftest import StartVault, rpc_error, stats, trailers, upsert

CARD = "4111 1111 1111 1111"
GITHUB = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"


@pytest.mark.parametrize("memory,code,reason,field", [
    (dict(content="tick marker for burst 5"), "FAILED_PRECONDITION", "LOG_NOISE",
     "memory.content"),
    (dict(content="Heartbeat: all systems nominal"), "FAILED_PRECONDITION", "LOG_NOISE",
     "memory.content"),
    (dict(content="Routine scan found nothing to report"), "FAILED_PRECONDITION", "LOG_NOISE",
     "memory.content"),
    (dict(content="The user speaks French", tier=m.TIER_LOG), "FAILED_PRECONDITION", "LOG_TIER",
     "memory.tier"),
    (dict(content="word " * 300), "FAILED_PRECONDITION", "TOO_LONG", "memory.content"),
    (dict(content="The user's SSN is 219-09-9999"), "FAILED_PRECONDITION", "PII_DETECTED",
     "memory.content"),
    (dict(content=f"Company card {CARD}"), "FAILED_PRECONDITION", "PII_DETECTED",
     "memory.content"),
    (dict(content="Staging db password: s3cretPass"), "FAILED_PRECONDITION", "PII_DETECTED",
     "memory.content"),
    (dict(content=f"CI uses {GITHUB}"), "FAILED_PRECONDITION", "PII_DETECTED", "memory.content"),
    (dict(content="   "), "INVALID_ARGUMENT", "EMPTY_CONTENT", "memory.content"),
    (dict(content="fine", tier=7), "INVALID_ARGUMENT", "BAD_ENUM", "memory.tier"),
])
def test_rejections_change_nothing(
    vault_live: Running, memory: dict[str, object], code: str, reason: str, field: str
) -> None:
    before = stats(vault_live)
    err = rpc_error(lambda: upsert(vault_live, agent_id="gate-reject", **memory))  # type: ignore[arg-type]
    assert err.code().name == code
    assert trailers(err) == {"memsidecar-reason": reason, "memsidecar-field": field}
    assert field in err.details()
    after = stats(vault_live)
    assert (after.live, after.forgotten, after.history_rows) == (
        before.live, before.forgotten, before.history_rows)


@pytest.mark.parametrize("content", [
    "Order 1234567812345678 shipped to the Lyon office",
    "The password policy requires twelve characters",
    "The team moved to a task-based sprint format",
    "We track the heart rate of the beta testers weekly",
    "Deploy commit 3f786850e387550fdab836ed7e6dc881de23001b to staging",
    "word " * 239,
    "Nah, no changes for me. Still enjoying my soda and candy after dinner.",
    "Heartbeat monitor showed 72 bpm during the run",
])
def test_ordinary_text_passes(vault_live: Running, content: str) -> None:
    reply = upsert(vault_live, content, agent_id="gate-accept")
    assert reply.created and not reply.deduplicated
    assert reply.memory.content == content


def test_pii_rejection_never_echoes_the_secret(
    vault_live: Running, caplog: pytest.LogCaptureFixture
) -> None:
    secret = "pwd=Zq9-unique-Secret-77"
    with caplog.at_level(logging.DEBUG):
        err = rpc_error(lambda: upsert(vault_live, f"the router {secret}", agent_id="pii"))
    assert "password" in err.details()
    assert "Zq9" not in err.details() and "Zq9" not in str(err.trailing_metadata())
    assert "Zq9" not in caplog.text and "Zq9" not in str([r.__dict__ for r in caplog.records])


def test_each_step_can_be_switched_off(start_vault: StartVault) -> None:
    live = start_vault(noise_gate=False, length_gate=False, pii_gate=False)
    for content in ("heartbeat ok", "x" * 5000, f"card {CARD}"):
        assert upsert(live, content).created
    assert upsert(live, "journal", tier=m.TIER_LOG).memory.tier == m.TIER_LOG


def test_custom_noise_phrases_and_length(start_vault: StartVault) -> None:
    live = start_vault(noise_phrases=("standup done",), max_chars=20)
    assert upsert(live, "heartbeat of a city").created  # default phrase no longer listed
    err = rpc_error(lambda: upsert(live, "Standup done, all good"))
    assert trailers(err)["memsidecar-reason"] == "LOG_NOISE"
    assert upsert(live, "Standup done; Bo ill").created  # carries a fact
    err = rpc_error(lambda: upsert(live, "twenty-one characters"))
    assert trailers(err)["memsidecar-reason"] == "TOO_LONG" and "20" in err.details()


def test_capacity_gate_per_scope(start_vault: StartVault) -> None:
    live = start_vault(max_memories_per_scope=2)
    first = upsert(live, "Alice likes tea", agent_id="alice").memory
    upsert(live, "Alice works in Berlin", agent_id="alice")
    err = rpc_error(lambda: upsert(live, "Alice has a cat", agent_id="alice"))
    assert err.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert trailers(err)["memsidecar-reason"] == "SCOPE_FULL"
    assert upsert(live, "Bob has a dog", agent_id="bob").created  # other scope unaffected
    assert upsert(live, "Alice likes green tea", id=first.id, agent_id="alice").memory.version == 2
    live.store.ForgetMemory(s.ForgetMemoryRequest(id=first.id, agent_id="alice"))
    assert upsert(live, "Alice has a cat", agent_id="alice").created
    assert stats(live).max_memories_per_scope == 2
    reply = live.store.ImportMemories(iter([s.UpsertMemoryRequest(memory=m.Memory(
        content="Alice plays chess", type=m.MEMORY_TYPE_FACT, agent_id="alice"))]))
    assert [(e.code, e.reason) for e in reply.errors] == [("RESOURCE_EXHAUSTED", "SCOPE_FULL")]


def test_import_reports_gate_reason_per_item(vault_live: Running) -> None:
    contents = [
        "Imports keep per-item reasons",
        "status unchanged since yesterday",
        f"card {CARD}",
        "x" * 1300,
        "Imports keep per-item reasons",
        "The office moved to Lyon",
    ]
    before = stats(vault_live)
    items = [s.UpsertMemoryRequest(memory=m.Memory(content=c, type=m.MEMORY_TYPE_FACT,
                                                   agent_id="importer")) for c in contents]
    items.append(s.UpsertMemoryRequest(memory=m.Memory(content="log", type=m.MEMORY_TYPE_FACT,
                                                       tier=m.TIER_LOG)))
    reply = vault_live.store.ImportMemories(iter(items))
    assert (reply.received, reply.stored, reply.deduplicated, reply.rejected) == (7, 2, 1, 4)
    assert [(e.index, e.code, e.reason) for e in reply.errors] == [
        (1, "FAILED_PRECONDITION", "LOG_NOISE"),
        (2, "FAILED_PRECONDITION", "PII_DETECTED"),
        (3, "FAILED_PRECONDITION", "TOO_LONG"),
        (6, "FAILED_PRECONDITION", "LOG_TIER"),
    ]
    assert "items[2].content" in reply.errors[1].message and "4111" not in reply.errors[1].message
    assert len(reply.ids) == 3 and reply.ids[0] == reply.ids[1]  # in-batch duplicate -> item 0
    after = stats(vault_live)
    assert after.live - before.live == 2 and after.history_rows - before.history_rows == 2
