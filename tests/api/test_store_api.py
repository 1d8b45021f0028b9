"""MemoryStore over real gRPC with the generated stub."""

from __future__ import annotations

import base64
import json
import math

import grpc
import pytest
from memsidecar.v1 import memory_pb2 as m
from memsidecar.v1 import store_pb2 as s

from sidecar.api.server_config import ServerConfig
from sidecar.embedding import Embedder
from tests.conftest import Running, start_server
from tests.injection.helpers import inject


def upsert(live: Running, content: str, type_: int = m.MEMORY_TYPE_FACT, **kw: object) -> m.Memory:
    reply = live.store.UpsertMemory(s.UpsertMemoryRequest(memory=m.Memory(
        content=content, type=type_, **kw)))
    return reply.memory


def status_of(call: object) -> grpc.RpcError:
    with pytest.raises(grpc.RpcError) as info:
        call()  # type: ignore[operator]
    return info.value


def test_upsert_creates_with_defaults(running: Running) -> None:
    mem = upsert(running, "The API uses JWT", m.MEMORY_TYPE_DECISION, agent_id="a1")
    assert len(mem.id) == 36 and mem.version == 1 and not mem.forgotten
    assert mem.importance == pytest.approx(0.8)
    assert mem.created_at.ToMicroseconds() == mem.updated_at.ToMicroseconds() > 0
    got = running.store.GetMemory(s.GetMemoryRequest(id=mem.id, agent_id="a1"))
    assert got == mem


@pytest.mark.parametrize("type_,expected", [
    (m.MEMORY_TYPE_IDENTITY, 1.0), (m.MEMORY_TYPE_GOAL, 0.9), (m.MEMORY_TYPE_TODO, 0.8),
    (m.MEMORY_TYPE_PREFERENCE, 0.7), (m.MEMORY_TYPE_EVENT, 0.4), (m.MEMORY_TYPE_OBSERVATION, 0.3),
])
def test_type_default_importance(running: Running, type_: int, expected: float) -> None:
    assert upsert(running, "x", type_).importance == pytest.approx(expected)


def test_explicit_zero_importance_is_kept(running: Running) -> None:
    assert upsert(running, "x", importance=0.0).importance == 0.0


def test_upsert_existing_id_updates_in_place(running: Running) -> None:
    first = upsert(running, "v1", id="fixed-id")
    reply = running.store.UpsertMemory(s.UpsertMemoryRequest(memory=m.Memory(
        id="fixed-id", content="v2", type=m.MEMORY_TYPE_FACT)))
    assert not reply.created
    assert reply.memory.version == 2 and reply.memory.content == "v2"
    assert reply.memory.created_at == first.created_at
    assert reply.memory.updated_at.ToMicroseconds() > first.updated_at.ToMicroseconds()


def test_upsert_that_changes_nothing_is_a_no_op(running: Running) -> None:
    first = upsert(running, "the deploy runs on friday", id="same", agent_id="a1",
                   importance=0.5, source="user", channel_id="c1")
    again = running.store.UpsertMemory(s.UpsertMemoryRequest(memory=m.Memory(
        id="same", content="the deploy runs on friday", type=m.MEMORY_TYPE_FACT,
        agent_id="a1", importance=0.5, source="user", channel_id="c1")))
    assert again.unchanged and not again.created and not again.deduplicated
    assert again.memory == first and again.memory.version == 1
    versions = running.server.app.memories.memories.versions.versions("same")
    assert [v.version for v in versions] == [1]  # no history row for it
    moved = running.store.UpsertMemory(s.UpsertMemoryRequest(memory=m.Memory(
        id="same", content="the deploy runs on friday", type=m.MEMORY_TYPE_FACT,
        agent_id="a1", importance=0.6, source="user", channel_id="c1")))
    assert not moved.unchanged and moved.memory.version == 2  # one field is a change


def test_last_accessed_at_unset_until_first_injected(running: Running) -> None:
    mem = upsert(running, "the billing service runs on PostgreSQL 16", agent_id="a1")
    assert not mem.HasField("last_accessed_at") and mem.access_count == 0
    got = running.store.GetMemory(s.GetMemoryRequest(id=mem.id, agent_id="a1"))
    assert not got.HasField("last_accessed_at")
    reply = inject(running, "which database does billing use?", agent_id="a1")
    assert [item.id for item in reply.items] == [mem.id]
    running.server.app.injector.states.writer.flush()
    got = running.store.GetMemory(s.GetMemoryRequest(id=mem.id, agent_id="a1"))
    assert got.HasField("last_accessed_at") and got.access_count == 1
    assert got.last_accessed_at.ToMicroseconds() >= mem.created_at.ToMicroseconds()


@pytest.mark.parametrize("memory,field", [
    (m.Memory(content="   ", type=m.MEMORY_TYPE_FACT), "memory.content"),
    (m.Memory(content="x", type=m.MEMORY_TYPE_UNSPECIFIED), "memory.type"),
    (m.Memory(content="x", type=42), "memory.type"),  # type: ignore[arg-type]
    (m.Memory(content="x", type=m.MEMORY_TYPE_FACT, importance=1.5), "memory.importance"),
    (m.Memory(content="x", type=m.MEMORY_TYPE_FACT, importance=-0.1), "memory.importance"),
    (m.Memory(content="x", type=m.MEMORY_TYPE_FACT, importance=math.nan), "memory.importance"),
    (m.Memory(content="x" * 20_000, type=m.MEMORY_TYPE_FACT), "memory.content"),
    (m.Memory(content="x", type=m.MEMORY_TYPE_FACT, id=" padded "), "memory.id"),
    (m.Memory(content="x", type=m.MEMORY_TYPE_FACT, tier=9), "memory.tier"),  # type: ignore[arg-type]
])
def test_bad_memory_is_invalid_argument_naming_field(
    running: Running, memory: m.Memory, field: str
) -> None:
    err = status_of(lambda: running.store.UpsertMemory(s.UpsertMemoryRequest(memory=memory)))
    assert err.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert field in err.details()
    assert dict(err.trailing_metadata())["memsidecar-field"] == field
    listed = running.store.ListMemories(s.ListMemoriesRequest(include_forgotten=True))
    assert not listed.memories


def test_missing_memory_is_invalid_argument(running: Running) -> None:
    err = status_of(lambda: running.store.UpsertMemory(s.UpsertMemoryRequest()))
    assert err.code() == grpc.StatusCode.INVALID_ARGUMENT


def test_get_missing_is_not_found(running: Running) -> None:
    err = status_of(lambda: running.store.GetMemory(s.GetMemoryRequest(id="nope")))
    assert err.code() == grpc.StatusCode.NOT_FOUND and "nope" in err.details()


def test_get_respects_agent_scope(running: Running) -> None:
    mine = upsert(running, "private", agent_id="alice")
    assert running.store.GetMemory(s.GetMemoryRequest(id=mine.id, agent_id="alice")).id == mine.id
    err = status_of(lambda: running.store.GetMemory(s.GetMemoryRequest(id=mine.id, agent_id="bob")))
    assert err.code() == grpc.StatusCode.NOT_FOUND


def test_forget_is_soft_and_idempotent(running: Running) -> None:
    mem = upsert(running, "to forget")
    first = running.store.ForgetMemory(s.ForgetMemoryRequest(id=mem.id))
    again = running.store.ForgetMemory(s.ForgetMemoryRequest(id=mem.id))
    assert first.changed and first.memory.forgotten and not again.changed
    assert running.store.GetMemory(s.GetMemoryRequest(id=mem.id)).forgotten
    assert not running.store.ListMemories(s.ListMemoriesRequest()).memories
    err = status_of(lambda: running.store.ForgetMemory(s.ForgetMemoryRequest(id="missing")))
    assert err.code() == grpc.StatusCode.NOT_FOUND


def test_list_filters_sorts_and_pages(running: Running) -> None:
    ids = []
    for i in range(7):
        ids.append(upsert(running, f"fact {i}", importance=i / 10,
                          channel_id="c1" if i % 2 else "c2",
                          agent_id="" if i < 5 else "bob").id)
    todo = upsert(running, "a todo", m.MEMORY_TYPE_TODO).id
    pages, token = [], ""
    while True:
        reply = running.store.ListMemories(s.ListMemoriesRequest(
            page_size=3, page_token=token, agent_id="bob"))
        pages.append([x.id for x in reply.memories])
        token = reply.next_page_token
        if not token:
            break
    assert [len(p) for p in pages] == [3, 3, 2]
    assert [i for p in pages for i in p] == [todo, *reversed(ids)]
    by_importance = running.store.ListMemories(s.ListMemoriesRequest(
        sort=s.SORT_ORDER_IMPORTANCE, types=[m.MEMORY_TYPE_FACT], agent_id="bob"))
    assert [x.id for x in by_importance.memories] == list(reversed(ids))
    channel = running.store.ListMemories(s.ListMemoriesRequest(channel_id="c1", agent_id="bob"))
    assert {x.id for x in channel.memories} == {ids[1], ids[3], ids[5]}
    shared = running.store.ListMemories(s.ListMemoriesRequest())
    assert {x.id for x in shared.memories} == {*ids[:5], todo}  # '' reads shared ones only
    alice = running.store.ListMemories(s.ListMemoriesRequest(agent_id="alice"))
    assert {x.id for x in alice.memories} == {*ids[:5], todo}
    err = status_of(lambda: running.store.ListMemories(s.ListMemoriesRequest(page_token="junk")))
    assert err.code() == grpc.StatusCode.INVALID_ARGUMENT and "page_token" in err.details()
    err = status_of(lambda: running.store.ListMemories(s.ListMemoriesRequest(page_size=5000)))
    assert err.code() == grpc.StatusCode.INVALID_ARGUMENT and "page_size" in err.details()


def test_page_tokens_are_signed_and_outlive_a_restart(config: ServerConfig,
                                                       embedder: Embedder) -> None:
    live = start_server(config, embedder)
    try:
        for i in range(3):
            upsert(live, f"fact {i}")
        first = live.store.ListMemories(s.ListMemoriesRequest(
            page_size=1, sort=s.SORT_ORDER_STORED))
        token = first.next_page_token
    finally:
        live.close()
    body, mac = token.rsplit(".", 1)
    keys = json.loads(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)))
    live = start_server(config, embedder)
    try:
        second = live.store.ListMemories(s.ListMemoriesRequest(
            page_size=1, sort=s.SORT_ORDER_STORED, page_token=token))
        assert [x.content for x in second.memories] == ["fact 1"]
        keys["k"] = [keys["k"][0] + 1]  # skip a row with the genuine mac: refused
        forged = base64.urlsafe_b64encode(json.dumps(keys).encode()).decode().rstrip("=")
        err = status_of(lambda: live.store.ListMemories(s.ListMemoriesRequest(
            sort=s.SORT_ORDER_STORED, page_token=f"{forged}.{mac}")))
        assert err.code() == grpc.StatusCode.INVALID_ARGUMENT and "page_token" in err.details()
    finally:
        live.close()


def test_edges(running: Running) -> None:
    a, b = upsert(running, "a").id, upsert(running, "b").id
    edge = running.store.AddEdge(s.AddEdgeRequest(edge=m.Edge(
        source_id=a, target_id=b, relation=m.RELATION_UPDATES)))
    assert edge.weight == pytest.approx(0.5) and edge.created_at.seconds > 0
    reweighted = running.store.AddEdge(s.AddEdgeRequest(edge=m.Edge(
        source_id=a, target_id=b, relation=m.RELATION_UPDATES, weight=0.9)))
    assert reweighted.weight == pytest.approx(0.9)
    running.store.RemoveEdge(s.RemoveEdgeRequest(source_id=a, target_id=b,
                                                 relation=m.RELATION_UPDATES))
    err = status_of(lambda: running.store.RemoveEdge(s.RemoveEdgeRequest(
        source_id=a, target_id=b, relation=m.RELATION_UPDATES)))
    assert err.code() == grpc.StatusCode.NOT_FOUND


@pytest.mark.parametrize("edge,code,field", [
    (dict(target_id="missing", relation=m.RELATION_RELATED_TO), "NOT_FOUND", "edge.target_id"),
    (dict(target_id="SELF", relation=m.RELATION_RELATED_TO), "INVALID_ARGUMENT", "edge.target_id"),
    (dict(target_id="B", relation=m.RELATION_UNSPECIFIED), "INVALID_ARGUMENT", "edge.relation"),
    (dict(target_id="B", relation=m.RELATION_PART_OF, weight=2.0), "INVALID_ARGUMENT",
     "edge.weight"),
])
def test_bad_edges(running: Running, edge: dict[str, object], code: str, field: str) -> None:
    a, b = upsert(running, "a").id, upsert(running, "b").id
    target = {"SELF": a, "B": b}.get(str(edge["target_id"]), edge["target_id"])
    msg = m.Edge(source_id=a, **{**edge, "target_id": target})  # type: ignore[arg-type]
    err = status_of(lambda: running.store.AddEdge(s.AddEdgeRequest(edge=msg)))
    assert err.code().name == code and field in err.details()


def test_import_batches_and_reports_per_item_errors(running: Running) -> None:
    items = [s.UpsertMemoryRequest(memory=m.Memory(content=f"imported memory number {i}",
                                                   type=m.MEMORY_TYPE_EVENT)) for i in range(600)]
    items[10] = s.UpsertMemoryRequest(memory=m.Memory(content="", type=m.MEMORY_TYPE_EVENT))
    items[300] = s.UpsertMemoryRequest(memory=m.Memory(content="x", type=99))  # type: ignore[arg-type]
    items[599] = s.UpsertMemoryRequest(memory=m.Memory(content="y", type=m.MEMORY_TYPE_FACT,
                                                       importance=7))
    summary = running.store.ImportMemories(iter(items))
    assert (summary.received, summary.stored, summary.rejected) == (600, 597, 3)
    assert [e.index for e in summary.errors] == [10, 300, 599]
    assert [e.code for e in summary.errors] == ["INVALID_ARGUMENT"] * 3
    assert "items[10].content" in summary.errors[0].message
    assert "items[300].type" in summary.errors[1].message
    assert summary.errors[0].reason == "EMPTY_CONTENT"
    assert len(set(summary.ids)) == 597
    app = running.server.app
    assert app.memories.memories.count() == 597
    vector = app.memories.memories.embedding(summary.ids[0])
    assert vector is not None and vector.shape == (384,)
