"""PostgreSQL stopped and started again under two sidecars: memory keeps serving, writes are
refused until it is back, channel state made meanwhile is reconciled, feeds catch up."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from memsidecar.v1 import injection_pb2 as i
from memsidecar.v1 import memory_pb2 as m
from memsidecar.v1 import store_pb2 as s

from sidecar.api.server import STORE_HEALTH
from sidecar.api.server_config import ServerConfig
from sidecar.app import App
from sidecar.embedding import Embedder
from sidecar.errors import PermissionDenied, Unavailable
from sidecar.injection.types import InjectRequest
from sidecar.records import Memory, MemoryDraft, MemoryType
from tests.conftest import Running, start_server
from tests.pg.cluster import Cluster
from tests.pg.sidecars import found, open_app
from tests.waiting import wait_for


def health(server: Running, service: str) -> int:
    stub = health_pb2_grpc.HealthStub(server.channel)
    return int(stub.Check(health_pb2.HealthCheckRequest(service=service)).status)


def ids(reply: i.InjectResponse) -> set[str]:
    return {item.id for item in reply.items}


@contextmanager
def sidecars(config: ServerConfig, embedder: Embedder) -> Iterator[tuple[Cluster, App, Running]]:
    """A throwaway cluster, sidecar "a" (an app) and a served one on one database of it, both
    holding 12 memories written through "a"; all closed and removed afterwards."""
    cluster = Cluster()
    cluster.start()
    a = server = None
    try:
        dsn = cluster.new_database()
        a = open_app(config, "a", embedder, dsn)
        mine = replace(config, data_dir=f"{config.data_dir}-b")
        Path(mine.data_dir).mkdir(parents=True)
        (Path(mine.data_dir) / "memsidecar.toml").write_text(
            f'[store]\nbackend = "postgres"\ndsn = "{dsn}"\n')
        server = start_server(mine, embedder)
        for n in range(6):
            a.memories.upsert(MemoryDraft(f"Service {n} pages the platform team on failure",
                                          MemoryType.FACT))
            a.memories.upsert(MemoryDraft(f"Nightly backups of shard {n} go to cold storage",
                                          MemoryType.FACT))
        wait_for(lambda: len(server.server.app.retriever.live) == 12)
        yield cluster, a, server
    finally:
        if server is not None:
            server.close()
        if a is not None:
            a.close()
        cluster.remove()


def test_outage_then_recovery(config: ServerConfig, embedder: Embedder) -> None:
    with sidecars(config, embedder) as (cluster, a, server):
        inject = i.InjectRequest(channel_id="c", text="who gets paged on failure?")
        before = server.injection.Inject(inject)
        assert before.items
        cluster.stop()
        wait_for(lambda: health(server, STORE_HEALTH) == health_pb2.HealthCheckResponse.NOT_SERVING)
        assert health(server, "") == health_pb2.HealthCheckResponse.SERVING
        hits = server.store.Search(s.SearchRequest(query="who gets paged?"))
        assert len(hits.hits) == 10  # served from memory
        during = server.injection.Inject(i.InjectRequest(  # state kept here meanwhile
            channel_id="c", text="where do the nightly backups go?"))
        assert during.items and during.turn == before.turn + 1
        assert not ids(during) & ids(before)
        with pytest.raises(grpc.RpcError) as refused:
            server.store.UpsertMemory(s.UpsertMemoryRequest(memory=m.Memory(
                content="Written while the store is away", type=m.MEMORY_TYPE_FACT)))
        assert refused.value.code() == grpc.StatusCode.UNAVAILABLE
        assert "PostgreSQL" in str(refused.value.details())
        with pytest.raises(Unavailable):
            a.memories.upsert(MemoryDraft("Also refused", MemoryType.FACT))
        cluster.start(cluster.port)
        wait_for(lambda: health(server, STORE_HEALTH) == health_pb2.HealthCheckResponse.SERVING)
        wait_for(lambda: a.feed is not None and a.feed.connected)
        after = a.memories.upsert(MemoryDraft("The database team owns the failover runbook",
                                              MemoryType.FACT)).memory
        wait_for(lambda: found(server.server.app, "failover runbook owner", after.id))
        again = server.injection.Inject(inject)  # reconciled: the turn and the cooldown hold
        assert again.turn == during.turn + 1
        assert not ids(again) & (ids(before) | ids(during))

        def counted() -> dict[str, Memory]:
            server.server.app.injector.states.writer.flush()  # held access records, then these
            return a.memories.memories.get_many(list(ids(during)))

        # what was kept here while the store was away is written once it is back
        wait_for(lambda: all(m.access_count >= 1 for m in counted().values()))
        touched = counted()
        assert touched and all(m.access_count == 1 for m in touched.values())
        assert a.memories.memories.count() == 13  # every acknowledged write, nothing else


def test_restart_under_writes_loses_nothing_acknowledged(config: ServerConfig,
                                                         embedder: Embedder) -> None:
    cluster = Cluster()
    cluster.start()
    apps = []
    try:
        dsn = cluster.new_database()
        a, b = open_app(config, "a", embedder, dsn), open_app(config, "b", embedder, dsn)
        apps += [a, b]
        acked: list[str] = []
        refused = 0
        stop = threading.Event()

        def write() -> None:
            nonlocal refused
            n = 0
            while not stop.is_set():
                n += 1
                try:
                    acked.append(a.memories.upsert(MemoryDraft(
                        f"Ticket {n} was filed against the {n % 7}th floor printer queue",
                        MemoryType.EVENT)).memory.id)
                except Unavailable:
                    refused += 1
                    time.sleep(0.05)

        writer = threading.Thread(target=write)
        writer.start()
        wait_for(lambda: len(acked) >= 3)
        cluster.stop("immediate")  # a crash of the server, not a clean shutdown
        wait_for(lambda: refused > 0)
        cluster.start(cluster.port)
        wait_for(lambda: a.feed is not None and a.feed.connected)
        mark = len(acked)
        wait_for(lambda: len(acked) >= mark + 3)
        stop.set()
        writer.join()
        stored = set(a.memories.memories.get_many(acked))
        assert stored == set(acked)
        wait_for(lambda: all(b.retriever.live.seq_of(i) is not None for i in acked))
    finally:
        for app in apps:
            app.close()
        cluster.remove()


def test_a_channel_first_used_during_an_outage_is_served_then_settled(
        config: ServerConfig, embedder: Embedder, caplog: pytest.LogCaptureFixture) -> None:
    """New channels during the outage: served from memory under a provisional owner. Once
    PostgreSQL is back, one nobody claimed meanwhile keeps its owner and turns; one another
    sidecar claimed meanwhile is theirs, and the turns served here are dropped (logged)."""
    caplog.set_level("WARNING", logger="sidecar")
    with sidecars(config, embedder) as (cluster, a, server):
        cluster.stop()
        wait_for(lambda: health(server, STORE_HEALTH) == health_pb2.HealthCheckResponse.NOT_SERVING)

        def inject(channel: str, agent: str = "ada", text: str = "who gets paged on failure?"
                   ) -> i.InjectResponse:
            return server.injection.Inject(i.InjectRequest(
                channel_id=channel, agent_id=agent, text=text))

        first, second = inject("fresh"), inject("fresh")
        assert first.items and (first.turn, second.turn) == (1, 2)
        assert not ids(first) & ids(second)  # the cooldown holds in memory
        assert inject("taken").turn == 1
        here = inject("twice", text="where do the nightly backups go?")
        with pytest.raises(grpc.RpcError) as denied:
            inject("fresh", agent="bob")  # the provisional owner is enforced meanwhile
        assert denied.value.code() == grpc.StatusCode.PERMISSION_DENIED

        cluster.start(cluster.port)
        wait_for(lambda: a.feed is not None and a.feed.connected)
        a.owners.claim("taken", "bob")  # the other sidecar claims "taken" first
        a.owners.claim("twice", "ada")  # and "twice", for the same agent, injecting on it
        there = a.injector.inject(InjectRequest("ada", "twice", "who gets paged on failure?"))
        assert there.turn == 1
        third = inject("fresh")  # settled: nobody claimed it meanwhile
        assert third.turn == 3 and not ids(third) & (ids(first) | ids(second))
        with pytest.raises(PermissionDenied):
            a.owners.check("fresh", "bob")
        with pytest.raises(grpc.RpcError) as lost:
            inject("taken")
        assert lost.value.code() == grpc.StatusCode.PERMISSION_DENIED
        again = inject("twice")  # on the other sidecar's state: its turn, not this one's
        assert again.turn == 2
        dropped = [r for r in caplog.records if "dropped, not merged" in r.getMessage()]
        assert [(r.channel, r.turns) for r in dropped] == [  # type: ignore[attr-defined]
            ("taken", 1), ("twice", 1)]
        server.server.app.injector.states.writer.flush()
        assert a.injector.states.repo.load("taken") is None  # nothing of it was merged
        fresh = a.injector.states.repo.load("fresh")
        assert fresh is not None and fresh.turn == 3
        twice = a.injector.states.repo.load("twice")
        assert twice is not None and twice.turn == 2
        assert {r.memory_id for r in twice.injected} == \
            {item.memory.id for item in there.items} | ids(again)
        assert here.items and not ids(here) & {r.memory_id for r in twice.injected}
