"""Backpressure, client streams, deadlines and interrupted imports against a real server.

Searches that stop inside the server on an Event (``Held``) hold a worker for as long as the
test wants; client streams wait on an Event for their next message; the idle clock of open
streams is brought forward with ``StreamGate.expire_idle``: no sleep decides an outcome.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from memsidecar.v1 import memory_pb2 as m
from memsidecar.v1 import store_pb2 as s
from memsidecar.v1 import vault_pb2 as v

from sidecar import deadline
from sidecar.api.server_config import ServerConfig
from sidecar.api.workers import FIRST_GUESS_S, MIN_SLOTS, SMOOTHING, TOLERANCE, Workers
from sidecar.app import App
from sidecar.embedding import Embedder
from sidecar.errors import DeadlineExceeded
from sidecar.metrics.config import HttpConfig
from sidecar.records import MemoryDraft, MemoryType
from tests.conftest import Running, start_server
from tests.waiting import wait_for

Serve = Callable[..., Running]


def memory(text: str) -> s.UpsertMemoryRequest:
    return s.UpsertMemoryRequest(memory=m.Memory(content=text, type=m.MEMORY_TYPE_FACT))


def held_import(live: Running, release: threading.Event, items: int = 0) -> grpc.Future:
    """An import that sends ``items`` memories, then waits for ``release``."""
    def stream() -> Iterator[s.UpsertMemoryRequest]:
        for i in range(items):
            yield memory(f"Imported fact number {i} about project {i * 7}")
        release.wait()

    return live.store.ImportMemories.future(stream())


def held_batches(live: Running, release: threading.Event,
                 batches: list[s.ImportBatch]) -> Any:
    """An ImportMemoriesStream that sends ``batches``, then waits for ``release``."""
    def stream() -> Iterator[s.ImportBatch]:
        yield from batches
        release.wait(30)

    return live.store.ImportMemoriesStream(stream())


class Held:
    """Searches that stop inside the server, holding their worker, until ``release``."""

    def __init__(self, live: Running, monkeypatch: pytest.MonkeyPatch) -> None:
        self.live, self.release = live, threading.Event()
        retriever = live.server.app.retriever
        real = retriever.search

        def search(query: Any) -> Any:
            self.release.wait(30)
            return real(query)

        monkeypatch.setattr(retriever, "search", search)

    def search(self) -> grpc.Future:
        return self.live.store.Search.future(s.SearchRequest(query="anything"), timeout=30)


@pytest.fixture
def serve(tmp_path: Path, embedder: Embedder) -> Iterator[Serve]:
    """Start a server with one worker and the given ``[server]`` keys."""
    started: list[Running] = []

    def start(**keys: Any) -> Running:
        config = ServerConfig(listen="127.0.0.1:0", data_dir=str(tmp_path / "data"),
                              max_workers=1, max_concurrent_rpcs=2, http=HttpConfig(listen=""))
        started.append(start_server(replace(config, **keys), embedder))
        return started[-1]

    yield start
    for live in started:
        live.close()


until = wait_for  # a state the server reaches on its own


def refused(call: Callable[[], Any]) -> grpc.RpcError:
    with pytest.raises(grpc.RpcError) as info:
        call()
    assert info.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED  # type: ignore[attr-defined]
    return info.value


def readers() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "stream-reader"]


def live_count(live: Running) -> int:
    return live.vault.VaultStats(v.VaultStatsRequest()).live


def healthy(live: Running) -> None:
    health = health_pb2_grpc.HealthStub(live.channel)
    for _ in range(20):
        assert health.Check(health_pb2.HealthCheckRequest(), timeout=5).status == \
            health_pb2.HealthCheckResponse.SERVING


def test_over_the_bound_is_resource_exhausted_and_health_still_answers(
        serve: Serve, monkeypatch: pytest.MonkeyPatch) -> None:
    small = serve(queue_target_ms=600_000)  # only the count bounds admission here
    held = Held(small, monkeypatch)
    first, second = held.search(), held.search()  # one holds the worker, one waits
    until(lambda: small.server.admission.admitted == 2)
    error = refused(lambda: small.store.Search(s.SearchRequest(query="anything"), timeout=5))
    assert "max_concurrent_rpcs" in error.details()  # type: ignore[attr-defined]
    raw = small.channel.unary_unary("/memsidecar.v1.MemoryStore/Search")
    refused(lambda: raw(b"\xff\xff not protobuf", timeout=5))  # refused unread, not parsed
    healthy(small)
    held.release.set()
    assert first.result(timeout=10).hits is not None and second.result(timeout=10)
    small.store.Search(s.SearchRequest(query="anything"), timeout=5)


def test_a_call_whose_expected_wait_is_over_the_target_is_refused_at_once(
        serve: Serve, monkeypatch: pytest.MonkeyPatch) -> None:
    small = serve(max_concurrent_rpcs=32, queue_target_ms=100)
    held = Held(small, monkeypatch)
    small.server.admission.workers.hold_s = 0.08  # a call holds the worker 80 ms on average
    first = held.search()
    until(lambda: small.server.admission.working == 1)
    second = held.search()  # waits for one call: 80 ms, within the target
    until(lambda: small.server.admission.admitted == 2)
    admission = small.server.admission
    assert admission.queued_work_s() == pytest.approx(0.16)
    # plus how far the first call's wait (its trip to a thread) was from its estimate (none)
    assert admission.expected_wait_s() == pytest.approx(0.16 + admission.bias_s)
    error = refused(lambda: small.store.Search(s.SearchRequest(query="anything"), timeout=5))
    assert re.search(r"about 1[6-9]\d ms", error.details())  # type: ignore[attr-defined]
    assert "queue_target_ms (100)" in error.details()  # type: ignore[attr-defined]
    refused(lambda: small.store.UpsertMemory(memory("Refused before any work"), timeout=5))
    healthy(small)
    held.release.set()
    first.result(timeout=10)
    second.result(timeout=10)
    assert live_count(small) == 0


def test_a_free_slot_admits_whatever_earlier_waits_were(serve: Serve) -> None:
    """The correction learnt from a burst's waits applies only while calls queue: with a slot
    free a call is admitted, so the correction is measured again."""
    small = serve(queue_target_ms=100)
    small.server.admission.bias_s = 10.0  # recent calls waited 10 s more than estimated
    assert small.server.admission.expected_wait_s() == 0.0
    small.store.Search(s.SearchRequest(query="anything"), timeout=5)
    assert small.server.admission.bias_s < 10.0


def test_the_expected_wait_follows_the_average_hold_time() -> None:
    workers = Workers(2)
    assert workers.hold_s == FIRST_GUESS_S
    for held in (1.0, 0.5):
        assert workers.take(lambda: True, lambda: None)
        workers.give(held)
    first = FIRST_GUESS_S + SMOOTHING * (1.0 - FIRST_GUESS_S)
    assert workers.hold_s == pytest.approx(first + SMOOTHING * (0.5 - first))
    assert workers.working == 0
    assert not workers.take(lambda: False, lambda: None)  # a caller gone takes no slot


def test_the_slots_shrink_while_calls_slow_each_other_down_and_grow_back() -> None:
    workers = Workers(8)
    assert workers.slots == MIN_SLOTS  # a burst at start-up does not find 8 slots on 2 cores
    one = Workers(1)
    assert one.slots == 1

    def rounds(n: int, held_s: float, method: str = "Search") -> None:
        """``n`` times: as many calls as there are slots, each taking ``held_s``."""
        for _ in range(n):
            at_once = workers.slots
            for _ in range(at_once):
                assert workers.take(lambda: True, lambda: None)
            for _ in range(at_once):
                workers.give(held_s, method)

    rounds(1, 0.01)  # alone, a Search takes 10 ms
    rounds(1, 0.2, "Inject")  # and an Inject 200 ms
    rounds(100, 0.01)  # calls keep their usual time with every slot in use: the slots grow
    assert workers.slots == 8
    rounds(20, 0.05)  # each Search five times slower than alone
    assert workers.stretch > TOLERANCE and workers.slots == MIN_SLOTS
    rounds(200, 0.01)  # back to their usual time with every slot in use
    assert workers.slots == 8
    rounds(1, 0.2, "Inject")  # an Inject's usual time is not a slowdown
    assert workers.slots == 8 and workers.working == 0


def test_stream_messages_leave_a_slot_to_unary_calls() -> None:
    workers = Workers(2)
    assert workers.take(lambda: True, lambda: None, stream=True)
    asked: list[bool] = []

    def once() -> bool:  # wanted on the first look only: one try, no wait
        asked.append(True)
        return len(asked) == 1

    assert not workers.take(once, lambda: 0.0, stream=True)  # the last slot is not for it
    assert workers.take(lambda: True, lambda: None)  # a unary call takes it
    assert workers.working == 2
    alone = Workers(1)  # one slot: shared
    assert alone.take(lambda: True, lambda: None, stream=True)


def test_stream_messages_that_keep_others_waiting_grow_the_slots() -> None:
    """Imports alone: while messages queue for the one slot streams may use, the slots grow
    (as unary calls' do), so several streams are worked on at once."""
    workers = Workers(8)
    assert workers.slots == MIN_SLOTS
    assert workers.take(lambda: True, lambda: None, stream=True)
    waiter = threading.Thread(target=lambda: workers.take(lambda: True, lambda: None,
                                                          stream=True))
    waiter.start()
    wait_for(lambda: len(workers._waiting) == 1)
    workers.give(stream=True)  # the slot goes to the waiter, and the limit grows by one
    waiter.join()
    assert workers.slots == MIN_SLOTS + 1
    assert workers.take(lambda: True, lambda: None, stream=True)  # a second stream, at once
    assert workers.working == 2
    workers.give(stream=True)  # nobody waits: no growth
    assert workers.slots == MIN_SLOTS + 1


def test_slots_go_to_waiting_calls_in_the_order_they_asked() -> None:
    workers = Workers(2)
    assert workers.take(lambda: True, lambda: None) and workers.take(lambda: True, lambda: None)
    served: list[str] = []
    names = ["first", "stream", "second", "third"]
    threads = []
    for index, name in enumerate(names):
        def wait(name: str = name) -> None:
            assert workers.take(lambda: True, lambda: None, stream=name == "stream")
            served.append(name)
        threads.append(threading.Thread(target=wait))
        threads[-1].start()
        wait_for(lambda queued=index + 1: len(workers._waiting) == queued)  # in this order
    workers.give()
    wait_for(lambda: served == ["first"])  # one free slot: the oldest waiter, no barging
    workers.give()  # the stream may not take the last free slot: the next unary call does
    wait_for(lambda: served == ["first", "second"])
    newcomer: list[str] = []
    late = threading.Thread(target=lambda: newcomer.append(str(workers.take(
        lambda: True, lambda: None))))
    late.start()
    wait_for(lambda: len(workers._waiting) == 3)  # behind the stream and the third
    workers.give()
    wait_for(lambda: served == ["first", "second", "third"])
    workers.give()  # one free again: the stream passes its turn to the newcomer
    wait_for(lambda: newcomer == ["True"])
    workers.give()
    assert served == ["first", "second", "third"]  # the stream still waits for two free slots
    workers.give()
    wait_for(lambda: served[3:] == ["stream"])
    for thread in (*threads, late):
        thread.join()
    assert workers.working == 1 and not workers._waiting


def test_a_call_that_expires_while_queued_changes_nothing(
        serve: Serve, monkeypatch: pytest.MonkeyPatch) -> None:
    small = serve()
    held = Held(small, monkeypatch)
    holder = held.search()
    until(lambda: small.server.admission.working == 1)  # the Search holds the one worker
    with pytest.raises(grpc.RpcError) as info:
        small.store.UpsertMemory(memory("The deadline passed before the worker was free"),
                                 timeout=0.3)
    assert info.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED  # type: ignore[attr-defined]
    held.release.set()
    holder.result(timeout=10)
    until(lambda: small.server.admission.admitted == 0)  # the expired call skipped its work
    assert live_count(small) == 0


def test_silent_streams_beyond_their_bound_leave_unary_calls_served(serve: Serve) -> None:
    small = serve(max_streams=3)
    release = threading.Event()
    silent = [held_import(small, release), held_import(small, release, items=3)]
    acks = held_batches(small, release, [s.ImportBatch(sequence=0, items=[
        s.ImportItem(memory=memory("A fact sent before the stream fell silent").memory)])])
    assert next(acks).committed == 1  # the stream holds no worker while it waits for more
    until(lambda: len(small.server.admission.streams.open) == 3)
    error = refused(lambda: small.store.ImportMemories(iter([]), timeout=5))
    assert "max_streams" in error.details()  # type: ignore[attr-defined]
    for n in range(5):  # one worker, three streams open: every unary call is still served
        small.store.Search(s.SearchRequest(query=f"fact {n}"), timeout=10)
        small.store.UpsertMemory(memory(f"Upserted while streams wait, number {n}"), timeout=10)
    healthy(small)
    release.set()
    assert [f.result(timeout=10).received for f in silent] == [0, 3]
    assert list(acks) == []
    until(lambda: not small.server.admission.streams.open)
    assert live_count(small) == 9


def test_forty_silent_imports_leave_searches_served(running: Running) -> None:
    release = threading.Event()
    silent = [held_import(running, release) for _ in range(40)]
    until(lambda: sum(f.done() for f in silent) == 40 - ServerConfig().max_streams)
    assert {f.code() for f in silent if f.done()} == {grpc.StatusCode.RESOURCE_EXHAUSTED}
    for n in range(8):
        running.store.Search(s.SearchRequest(query=f"anything {n}"), timeout=10)
    healthy(running)
    release.set()
    codes = [f.code() for f in silent]  # each waits for its call's end
    assert codes.count(grpc.StatusCode.OK) == ServerConfig().max_streams
    assert codes.count(grpc.StatusCode.RESOURCE_EXHAUSTED) == 40 - ServerConfig().max_streams


@pytest.mark.parametrize("method", ["ImportMemories", "ImportMemoriesStream"])
def test_a_silent_stream_ends_after_the_idle_timeout(serve: Serve, method: str) -> None:
    small = serve(stream_idle_timeout_s=0.05)
    release = threading.Event()

    def nothing() -> Iterator[Any]:
        release.wait(30)
        yield from ()

    call = getattr(small.store, method)
    with pytest.raises(grpc.RpcError) as info:
        reply = call(nothing(), timeout=30)
        list(reply) if method == "ImportMemoriesStream" else reply
    assert info.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED  # type: ignore[attr-defined]
    assert "no message from the client for 0.05 s" in info.value.details()  # type: ignore
    assert "stream_idle_timeout_s" in info.value.details()  # type: ignore[attr-defined]
    until(lambda: not small.server.admission.streams.open)
    until(lambda: not readers())  # the client still holds its side open: no thread waits
    release.set()
    small.store.Search(s.SearchRequest(query="anything"), timeout=10)


def test_a_timed_out_import_keeps_the_committed_batches_and_nothing_after(
        running: Running) -> None:
    release = threading.Event()
    future = held_import(running, release, items=300)  # one batch of 256, then 44 pending
    until(lambda: live_count(running) == 256)
    running.server.admission.streams.expire_idle()
    with pytest.raises(grpc.RpcError) as info:
        future.result(timeout=30)
    release.set()
    assert info.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED  # type: ignore[attr-defined]
    assert "stream_idle_timeout_s" in info.value.details()  # type: ignore[attr-defined]
    trailers = dict(info.value.trailing_metadata())  # type: ignore[attr-defined]
    assert trailers["memsidecar-committed"] == "256"
    until(lambda: not running.server.admission.streams.open)
    assert live_count(running) == 256  # the 44 items after the last commit were not written


def test_a_timed_out_batch_stream_keeps_every_acknowledged_batch(running: Running) -> None:
    release = threading.Event()
    batches = [s.ImportBatch(sequence=n, items=[s.ImportItem(
        memory=memory(f"Batch {n} item {i} about the harbour crane").memory)
        for i in range(5)]) for n in range(2)]
    acks = held_batches(running, release, batches)
    answered = [next(acks), next(acks)]
    assert [a.sequence for a in answered] == [0, 1]
    assert sum(a.committed + a.deduplicated for a in answered) == 10
    running.server.admission.streams.expire_idle()
    with pytest.raises(grpc.RpcError) as info:
        next(acks)
    release.set()
    assert info.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED  # type: ignore[attr-defined]
    until(lambda: not running.server.admission.streams.open)
    assert live_count(running) == sum(a.committed for a in answered)


def test_an_interrupted_import_reports_what_was_committed(
        running: Running, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level("INFO", logger="sidecar")
    release = threading.Event()
    future = held_import(running, release, items=300)  # one batch of 256, then 44 pending
    wait_for(lambda: live_count(running) >= 256)
    assert live_count(running) == 256
    future.cancel()
    release.set()
    wait_for(lambda: any(r.getMessage() == "import interrupted" for r in caplog.records))
    record = next(r for r in caplog.records if r.getMessage() == "import interrupted")
    assert record.levelname == "INFO" and record.stored == 256  # type: ignore[attr-defined]
    assert not [r for r in caplog.records if r.levelname == "ERROR"]
    assert live_count(running) == 256  # the 44 items after the last commit were not written


def test_an_upsert_whose_caller_is_gone_rolls_back_at_commit(app: App) -> None:
    bound = deadline.bind(lambda: False)  # the caller left while the memory was embedded
    try:
        with pytest.raises(DeadlineExceeded):
            app.memories.upsert(MemoryDraft("Nobody waits for this one", MemoryType.FACT))
    finally:
        deadline.unbind(bound)
    assert app.memories.memories.count(include_forgotten=True) == 0
    assert app.db.query_one("SELECT count(*) FROM memory_versions") == (0,)
    assert app.memories.upsert(MemoryDraft("Somebody waits", MemoryType.FACT)).created
