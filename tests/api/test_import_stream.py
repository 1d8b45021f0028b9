"""ImportMemoriesStream over real gRPC, on SQLite and on PostgreSQL: batches acknowledged,
idempotent resends, resuming after a broken stream, restores of exported memories, and
ListMemories over every scope."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import replace

import grpc
import pytest
from memsidecar.v1 import memory_pb2 as m
from memsidecar.v1 import store_pb2 as s
from memsidecar.v1 import vault_pb2 as v

from sidecar.api.server_config import ServerConfig
from sidecar.embedding import Embedder
from sidecar.memory.validation import MAX_TIME_US, MAX_VERSION
from tests.conftest import Running, on_postgres, start_server
from tests.held import HeldEmbedder


@pytest.fixture
def running(running_on_each: Running) -> Running:
    return running_on_each


def item(i: int, **kw: object) -> s.ImportItem:
    fields: dict[str, object] = {"id": f"mem-{i}", "content": f"fact number {i} about the "
                                 f"{'alpha beta gamma delta'.split()[i % 4]} project",
                                 "type": m.MEMORY_TYPE_FACT, **kw}
    return s.ImportItem(memory=m.Memory(**fields))  # type: ignore[arg-type]


def batch(seq: int, items: list[s.ImportItem]) -> s.ImportBatch:
    return s.ImportBatch(sequence=seq, items=items)


def every(live: Running, **kw: object) -> list[m.Memory]:
    found: list[m.Memory] = []
    token = ""
    while True:
        page = live.store.ListMemories(s.ListMemoriesRequest(
            page_size=7, page_token=token, sort=s.SORT_ORDER_STORED, all_agents=True,
            include_forgotten=True, **kw))  # type: ignore[arg-type]
        found.extend(page.memories)
        token = page.next_page_token
        if not token:
            return found


def test_every_batch_is_acknowledged_with_its_counts_and_ids(running: Running) -> None:
    batches = [batch(seq, [item(i) for i in range(start, min(start + 100, 250))])
               for seq, start in enumerate(range(0, 250, 100))]
    acks = list(running.store.ImportMemoriesStream(iter(batches)))
    assert [a.sequence for a in acks] == [0, 1, 2]
    assert [a.committed for a in acks] == [100, 100, 50]
    assert [a.rejected + a.deduplicated for a in acks] == [0, 0, 0]
    assert [list(a.ids) for a in acks] == [[i.memory.id for i in b.items] for b in batches]
    assert len(every(running)) == 250


def test_a_resent_batch_commits_nothing_twice(running: Running) -> None:
    first = batch(0, [item(i) for i in range(5)] + [item(9, id="", content="no id at all")])
    (ack,) = running.store.ImportMemoriesStream(iter([first]))
    assert ack.committed == 6
    (again,) = running.store.ImportMemoriesStream(iter([first]))
    assert (again.committed, again.deduplicated, again.rejected) == (0, 6, 0)
    stored = every(running)
    assert len(stored) == 6 and {mem.version for mem in stored} == {1}
    changed = batch(1, [item(0, content="fact number 0, corrected")])
    (update,) = running.store.ImportMemoriesStream(iter([changed]))
    assert update.committed == 1
    assert running.store.GetMemory(s.GetMemoryRequest(id="mem-0")).version == 2


def test_rejected_items_are_listed_and_counted_by_the_gate_metric(running: Running) -> None:
    rejections = running.server.app.metrics.registry

    def gate(reason: str) -> float:
        return rejections.get_sample_value("memsidecar_write_rejections_total",
                                           {"reason": reason}) or 0.0

    before = gate("LOG_TIER")
    items = [item(0), item(1, content="   "), item(2, tier=m.TIER_LOG), item(3)]
    (ack,) = running.store.ImportMemoriesStream(iter([batch(0, items)]))
    assert (ack.committed, ack.rejected) == (2, 2)
    assert [(e.index, e.reason, e.code) for e in ack.errors] == [
        (1, "EMPTY_CONTENT", "INVALID_ARGUMENT"), (2, "LOG_TIER", "FAILED_PRECONDITION")]
    assert list(ack.ids) == ["mem-0", "mem-3"]
    assert gate("LOG_TIER") - before == 1
    running.store.ImportMemories(iter([s.UpsertMemoryRequest(memory=items[2].memory)]))
    assert gate("LOG_TIER") - before == 2  # ImportMemories' rejections count too


def test_a_batch_over_the_limit_ends_the_stream_and_stores_nothing_of_it(
        running: Running) -> None:
    replies = running.store.ImportMemoriesStream(iter([
        batch(0, [item(0)]), batch(1, [item(i) for i in range(1, 102)])]))
    first = next(replies)
    assert first.committed == 1
    with pytest.raises(grpc.RpcError) as refused:
        next(replies)
    assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT  # type: ignore[attr-defined]
    assert "at most 100" in refused.value.details()  # type: ignore[attr-defined]
    assert [mem.id for mem in every(running)] == ["mem-0"]


@pytest.fixture(params=["sqlite", "postgres"])
def one_worker(request: pytest.FixtureRequest, config: ServerConfig,
               embedder: Embedder) -> Iterator[tuple[Running, HeldEmbedder]]:
    """A server with one worker, so that a call runs only after the one before it finished,
    whose embeddings of batches are held until their call expired."""
    config = replace(config, max_workers=1)
    if request.param == "postgres":
        config = on_postgres(config, request.getfixturevalue("pg_dsn"))
    held = HeldEmbedder(embedder, "embed")
    live = start_server(config, held)  # type: ignore[arg-type]
    yield live, held
    live.close()


def test_a_call_that_expires_mid_batch_changes_nothing(
        one_worker: tuple[Running, HeldEmbedder]) -> None:
    """The batch's embedding is held until the call's deadline has passed; the server then
    reaches the commit point of a call nobody waits for. A call whose deadline passed before
    its batch was reached (a loaded machine) changes nothing either; then the next has a
    longer deadline."""
    running, held = one_worker
    batch_of_ten = batch(0, [item(i) for i in range(10)])
    timeout = 0.05
    while not held.entered:
        with pytest.raises(grpc.RpcError) as expired:
            list(running.store.ImportMemoriesStream(iter([batch_of_ten]), timeout=timeout))
        assert expired.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED  # type: ignore[attr-defined]
        assert every(running) == []  # on the one worker: after the import call ended
        timeout *= 2
    assert every(running) == []  # after the call that was held, whichever it was


def test_a_broken_stream_resumes_by_resending_the_unacknowledged_batches(
        running: Running) -> None:
    batches = [batch(seq, [item(seq * 10 + i) for i in range(10)]) for seq in range(4)]
    acked: list[int] = []
    sent_two = threading.Event()

    def requests() -> Iterator[s.ImportBatch]:
        yield batches[0]
        yield batches[1]
        sent_two.set()
        threading.Event().wait(30)  # the client goes away while the stream is open

    call = running.store.ImportMemoriesStream(requests())
    acked.append(next(call).sequence)
    sent_two.wait()
    call.cancel()  # the break: batch 1 may or may not be committed, its ack is lost
    resent = [b for b in batches if b.sequence not in acked]
    acks = list(running.store.ImportMemoriesStream(iter(resent)))
    assert [a.sequence for a in acks] == [1, 2, 3]
    assert sum(a.committed + a.deduplicated for a in acks) == 30
    stored = every(running)
    assert sorted(mem.id for mem in stored) == sorted(f"mem-{i}" for i in range(40))
    assert {mem.version for mem in stored} == {1}


def restored(i: int, **kw: object) -> s.ImportItem:
    memory = item(i, version=4, agent_id="ada", **kw).memory
    memory.created_at.FromMicroseconds(1_700_000_000_000_000 + i)
    memory.updated_at.FromMicroseconds(1_700_000_500_000_000 + i)
    return s.ImportItem(memory=memory, restore=True)


def test_a_restore_keeps_the_server_owned_fields(running: Running) -> None:
    items = [restored(0), restored(1, forgotten=True, content="fact number 0 about the alpha "
                                   "project")]
    (ack,) = running.store.ImportMemoriesStream(iter([batch(0, items)]))
    assert (ack.committed, ack.deduplicated) == (2, 0)  # a forgotten one is nobody's duplicate
    for sent in items:
        got = running.store.GetMemory(s.GetMemoryRequest(id=sent.memory.id, agent_id="ada"))
        assert (got.version, got.created_at, got.updated_at, got.forgotten) == (
            4, sent.memory.created_at, sent.memory.updated_at, sent.memory.forgotten)
    hits = running.store.Search(s.SearchRequest(query="alpha project", agent_id="ada")).hits
    assert [h.memory.id for h in hits] == ["mem-0"]  # the forgotten one is never served
    (again,) = running.store.ImportMemoriesStream(iter([batch(1, items)]))
    assert (again.committed, again.deduplicated) == (0, 2)
    (other,) = running.store.ImportMemoriesStream(iter([batch(2, [restored(0, content="new")])]))
    assert [(e.reason, e.code) for e in other.errors] == [("ALREADY_STORED", "ALREADY_EXISTS")]


def test_a_restore_needs_its_id_version_and_times(running: Running) -> None:
    no_times = s.ImportItem(memory=item(0, version=1).memory, restore=True)
    no_version = restored(1)
    no_version.memory.version = 0
    (ack,) = running.store.ImportMemoriesStream(iter([batch(0, [no_times, no_version])]))
    assert [(e.index, e.reason) for e in ack.errors] == [(0, "BAD_RESTORE"), (1, "BAD_RESTORE")]


def test_a_memory_restored_at_the_largest_version_still_updates_and_forgets(
        running: Running) -> None:
    """Also the latest time a restore takes: the update after it is a valid Timestamp."""
    top = restored(0)
    top.memory.version = MAX_VERSION
    top.memory.updated_at.FromMicroseconds(MAX_TIME_US - 1)
    (ack,) = running.store.ImportMemoriesStream(iter([batch(0, [top])]))
    assert ack.committed == 1, ack.errors
    updated = running.store.UpsertMemory(s.UpsertMemoryRequest(memory=m.Memory(
        id="mem-0", content="fact number 0, changed", type=m.MEMORY_TYPE_FACT,
        agent_id="ada"))).memory
    assert updated.version == MAX_VERSION + 1
    assert updated.updated_at.ToMicroseconds() == MAX_TIME_US
    forgotten = running.store.ForgetMemory(s.ForgetMemoryRequest(id="mem-0", agent_id="ada"))
    assert forgotten.changed and forgotten.memory.version == MAX_VERSION + 2
    history = running.vault.GetMemoryHistory(v.GetMemoryHistoryRequest(id="mem-0",
                                                                      agent_id="ada"))
    assert {x.version for x in history.versions} == {MAX_VERSION + i for i in range(3)}


def test_list_all_agents_pages_in_stored_order(running: Running) -> None:
    items = [item(i, agent_id=["", "ada", "bob"][i % 3]) for i in range(20)]
    running.store.ImportMemoriesStream(iter([batch(0, items)])).next()
    running.store.UpsertMemory(s.UpsertMemoryRequest(memory=items[5].memory))  # updated: stays
    assert [mem.id for mem in every(running)] == [f"mem-{i}" for i in range(20)]
    shared = running.store.ListMemories(s.ListMemoriesRequest(page_size=100)).memories
    assert {mem.agent_id for mem in shared} == {""}
    with pytest.raises(grpc.RpcError) as both:
        every(running, agent_id="ada")
    assert both.value.code() == grpc.StatusCode.INVALID_ARGUMENT  # type: ignore[attr-defined]
