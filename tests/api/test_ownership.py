"""Ownership with authentication off: the request's agent_id is the caller, '' the shared scope."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import grpc
import pytest
from memsidecar.v1 import injection_pb2 as inj
from memsidecar.v1 import memory_pb2 as m
from memsidecar.v1 import store_pb2 as s
from memsidecar.v1 import vault_pb2 as v

from sidecar.injection.owners import ChannelOwners
from sidecar.injection.sweep import sweep_once
from tests.conftest import Running

REL = m.RELATION_RELATED_TO


def upsert(live: Running, content: str, **kw: Any) -> m.Memory:
    return live.store.UpsertMemory(s.UpsertMemoryRequest(memory=m.Memory(
        content=content, type=m.MEMORY_TYPE_FACT, **kw))).memory


def code(call: Callable[[], object]) -> grpc.StatusCode:
    with pytest.raises(grpc.RpcError) as info:
        call()
    return info.value.code()  # type: ignore[attr-defined, no-any-return]


def test_the_shared_scope_reads_shared_memories_only(running: Running) -> None:
    private = upsert(running, "Alice's locker code is in the blue notebook", agent_id="alice")
    shared = upsert(running, "The team meets on Mondays")
    assert code(lambda: running.store.GetMemory(s.GetMemoryRequest(id=private.id))) == \
        grpc.StatusCode.NOT_FOUND
    assert code(lambda: running.vault.GetMemoryHistory(v.GetMemoryHistoryRequest(
        id=private.id))) == grpc.StatusCode.NOT_FOUND
    listed = running.store.ListMemories(s.ListMemoriesRequest())
    assert [x.id for x in listed.memories] == [shared.id]
    hits = running.store.Search(s.SearchRequest(query="locker code notebook")).hits
    assert private.id not in {h.memory.id for h in hits}
    mine = running.store.Search(s.SearchRequest(query="locker code notebook", agent_id="alice"))
    assert private.id in {h.memory.id for h in mine.hits}


def test_another_agents_memory_cannot_be_written(running: Running) -> None:
    mem = upsert(running, "Alice prefers tea", agent_id="alice")
    other = upsert(running, "Bob prefers coffee", agent_id="bob")
    denied = grpc.StatusCode.PERMISSION_DENIED
    hidden = grpc.StatusCode.NOT_FOUND
    for agent in ("bob", ""):
        assert code(lambda a=agent: upsert(  # type: ignore[misc]
            running, "Alice prefers coffee", id=mem.id, agent_id=a)) == denied
        assert code(lambda a=agent: running.store.ForgetMemory(  # type: ignore[misc]
            s.ForgetMemoryRequest(id=mem.id, agent_id=a))) == hidden
        assert code(lambda a=agent: running.vault.PromoteToCanon(  # type: ignore[misc]
            v.PromoteToCanonRequest(id=mem.id, agent_id=a))) == hidden
    assert code(lambda: running.store.AddEdge(s.AddEdgeRequest(agent_id="bob", edge=m.Edge(
        source_id=other.id, target_id=mem.id, relation=REL)))) == hidden
    reply = running.store.ImportMemories(iter([s.UpsertMemoryRequest(memory=m.Memory(
        id=mem.id, content="taken over", type=m.MEMORY_TYPE_FACT, agent_id="bob"))]))
    assert reply.stored == 0 and reply.errors[0].code == "PERMISSION_DENIED"
    assert reply.errors[0].message.find(mem.id) == -1
    after = running.store.GetMemory(s.GetMemoryRequest(id=mem.id, agent_id="alice"))
    assert (after.content, after.version, after.forgotten) == ("Alice prefers tea", 1, False)
    # The owner still can; an edge between own and shared memories is allowed.
    shared = upsert(running, "Tea is served at four")
    running.store.AddEdge(s.AddEdgeRequest(agent_id="alice", edge=m.Edge(
        source_id=mem.id, target_id=shared.id, relation=REL)))
    assert code(lambda: running.store.RemoveEdge(s.RemoveEdgeRequest(
        source_id=mem.id, target_id=shared.id, relation=REL, agent_id="bob"))) == hidden
    running.store.RemoveEdge(s.RemoveEdgeRequest(
        source_id=mem.id, target_id=shared.id, relation=REL, agent_id="alice"))
    assert running.store.ForgetMemory(s.ForgetMemoryRequest(id=mem.id, agent_id="alice")).changed


def test_a_channel_belongs_to_its_first_injector(running: Running) -> None:
    def inject(agent: str) -> inj.InjectResponse:
        return running.injection.Inject(inj.InjectRequest(
            channel_id="chat-1", agent_id=agent, text="what do I drink?"))

    inject("alice")
    denied = grpc.StatusCode.PERMISSION_DENIED
    assert code(lambda: inject("bob")) == denied
    assert code(lambda: running.injection.ResetChannel(inj.ResetChannelRequest(
        channel_id="chat-1", agent_id="bob"))) == denied
    assert code(lambda: running.injection.ResetChannel(inj.ResetChannelRequest(
        channel_id="chat-1"))) == denied
    assert running.injection.ResetChannel(inj.ResetChannelRequest(
        channel_id="chat-1", agent_id="alice")).existed
    inject("bob")  # a reset channel is free again


def test_a_failed_first_inject_claims_no_channel(running: Running) -> None:
    def inject(agent: str, turn: int = 0) -> inj.InjectResponse:
        return running.injection.Inject(inj.InjectRequest(
            channel_id="fresh", agent_id=agent, text="what do we use?", turn=turn))

    assert code(lambda: inject("alice", turn=2**62)) == grpc.StatusCode.INVALID_ARGUMENT
    assert inject("bob").turn == 1  # alice's failed call left the channel unowned
    assert code(lambda: inject("alice")) == grpc.StatusCode.PERMISSION_DENIED


def test_idle_channels_are_swept(running: Running) -> None:
    app = running.server.app
    for channel in ("old", "fresh"):
        running.injection.Inject(inj.InjectRequest(channel_id=channel, text="hello there"))
    app.injector.states.writer.flush()
    app.db.execute("UPDATE channel_owners SET last_used_us = 1 WHERE channel_id = 'old'")
    owners: ChannelOwners = app.owners
    assert sweep_once(owners, app.injector.reset, ttl_s=3600) == 1
    left = {r[0] for r in app.db.execute("SELECT channel_id FROM injection_channels")}
    assert left == {"fresh"}
    assert sweep_once(owners, app.injector.reset, ttl_s=0) == 0  # 0: keep forever


def test_another_agents_channel_cannot_be_pruned(running: Running) -> None:
    """PruneHistory with a channel changes the channel's cooldowns: its owner's only."""
    for fact in ("Alice drinks green tea", "Alice drinks it at four", "Alice likes jasmine tea"):
        upsert(running, fact, agent_id="alice")

    def inject() -> list[str]:
        reply = running.injection.Inject(inj.InjectRequest(
            channel_id="chat-1", agent_id="alice", text="what tea does alice drink?"))
        return [item.id for item in reply.items]

    assert inject()
    for agent in ("bob", ""):
        assert code(lambda a=agent: running.injection.PruneHistory(  # type: ignore[misc]
            inj.PruneHistoryRequest(channel_id="chat-1", agent_id=a))) == \
            grpc.StatusCode.PERMISSION_DENIED
    assert inject() == []  # still in cooldown
    pruned = running.injection.PruneHistory(inj.PruneHistoryRequest(
        channel_id="chat-1", agent_id="alice"))
    assert list(pruned.released_turns) == [1]
    assert inject()  # the owner's prune released them
