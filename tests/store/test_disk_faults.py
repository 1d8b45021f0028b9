"""A full or read-only data dir, for real (a small tmpfs): writes refused with DISK_FULL /
NOT_WRITABLE naming the path, one log line and no traceback, a counter, ``memsidecar.store``
NOT_SERVING; reads served; writes back once space is freed; a start on such a disk serves
reads; the write-behind thread survives a refused group."""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Callable, Iterator
from contextlib import closing
from dataclasses import replace
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from memsidecar.v1 import injection_pb2 as i
from memsidecar.v1 import memory_pb2 as m
from memsidecar.v1 import settings_pb2 as st
from memsidecar.v1 import store_pb2 as s

from sidecar.api.server import STORE_HEALTH
from sidecar.api.server_config import ServerConfig
from sidecar.embedding import Embedder
from sidecar.errors import DiskFull
from sidecar.store.db import Database
from sidecar.store.write_behind import WriteBehind
from tests.conftest import Running, start_server
from tests.small_disk import SmallDisk, small_disk
from tests.waiting import wait_for

SERVING = health_pb2.HealthCheckResponse.SERVING
NOT_SERVING = health_pb2.HealthCheckResponse.NOT_SERVING


@pytest.fixture
def disk(tmp_path: Path) -> Iterator[SmallDisk]:
    with small_disk(tmp_path / "disk") as mounted:
        yield mounted


@pytest.fixture
def on_disk(config: ServerConfig, disk: SmallDisk) -> ServerConfig:
    return replace(config, data_dir=str(disk.root / "data"))


def health(server: Running, service: str = STORE_HEALTH) -> int:
    stub = health_pb2_grpc.HealthStub(server.channel)
    return int(stub.Check(health_pb2.HealthCheckRequest(service=service)).status)


def upsert(server: Running, content: str) -> m.Memory:
    return server.store.UpsertMemory(s.UpsertMemoryRequest(
        memory=m.Memory(content=content, type=m.MEMORY_TYPE_FACT))).memory


def refused(call: Callable[[], object]) -> grpc.RpcError:
    with pytest.raises(grpc.RpcError) as caught:
        call()
    return caught.value


def reason(err: grpc.RpcError) -> str:
    return str(dict(err.trailing_metadata())["memsidecar-reason"])


def writes(server: Running, n: int) -> dict[str, Callable[[], object]]:
    """Each kind of write, as a call to make (the new channel and memory named by ``n``)."""
    def stream() -> list[s.ImportBatchAck]:
        batch = s.ImportBatch(sequence=1, items=[s.ImportItem(memory=m.Memory(
            content=f"Imported fact number {n} about the billing service",
            type=m.MEMORY_TYPE_FACT))])
        return list(server.store.ImportMemoriesStream(iter([batch])))
    return {
        "UpsertMemory": lambda: upsert(server, f"The gateway {n} restarts at noon"),
        "Inject": lambda: server.injection.Inject(i.InjectRequest(
            channel_id=f"new-{n}", text="When does the gateway restart?")),
        "UpdateConfig": lambda: server.settings.UpdateConfig(st.UpdateConfigRequest(
            agent_id="ada", memory_injection=st.MemoryInjectionConfig(search_limit=10 + n))),
        "ImportMemoriesStream": stream,
    }


def refusals(server: Running, why: str) -> float:
    value = server.server.app.metrics.registry.get_sample_value(
        "memsidecar_disk_refusals_total", {"reason": why})
    return float(value or 0)


def no_tracebacks(caplog: pytest.LogCaptureFixture) -> None:
    assert [r.getMessage() for r in caplog.records if r.exc_info] == []
    assert not [r for r in caplog.records if "unhandled" in r.getMessage()]


def test_full_disk_refuses_writes_serves_reads_and_recovers(
        on_disk: ServerConfig, disk: SmallDisk, embedder: Embedder,
        caplog: pytest.LogCaptureFixture) -> None:
    server = start_server(on_disk, embedder)
    try:
        kept = upsert(server, "The gateway restarts every day at noon")
        assert health(server) == SERVING
        disk.fill()
        caplog.clear()
        caplog.set_level(logging.INFO)
        db = Path(on_disk.data_dir) / "memsidecar.sqlite3"
        for name, call in writes(server, 1).items():
            err = refused(call)
            assert err.code() == grpc.StatusCode.RESOURCE_EXHAUSTED, name
            assert reason(err) == "DISK_FULL", name
            path = Path(on_disk.data_dir) / "memsidecar.toml" if name == "UpdateConfig" else db
            assert f"the file system holding {path} is full" in (err.details() or ""), name
            assert "Free space there" in (err.details() or ""), name
        assert refusals(server, "DISK_FULL") == 4
        assert health(server) == NOT_SERVING
        assert health(server, "") == SERVING  # reads are served
        hits = server.store.Search(s.SearchRequest(query="when does the gateway restart?"))
        assert [h.memory.id for h in hits.hits] == [kept.id]
        assert server.store.GetMemory(s.GetMemoryRequest(id=kept.id)).content == \
            kept.content
        lines = [r for r in caplog.records if r.name == "sidecar.disk"]
        assert len(lines) == 1 and lines[0].levelno == logging.WARNING  # one a minute
        assert "DISK_FULL" == lines[0].__dict__["reason"]
        no_tracebacks(caplog)

        disk.free()
        wait_for(lambda: health(server) == SERVING)  # the probe found space
        assert any("writes accepted again" in r.getMessage() for r in caplog.records)
        for call in writes(server, 2).values():
            call()
        assert len(server.store.Search(s.SearchRequest(
            query="billing service imported fact")).hits) >= 1
        no_tracebacks(caplog)
    finally:
        server.close()


def test_start_on_full_disk_serves_reads_then_writes_once_freed(
        on_disk: ServerConfig, disk: SmallDisk, embedder: Embedder,
        caplog: pytest.LogCaptureFixture) -> None:
    server = start_server(on_disk, embedder)
    kept = upsert(server, "Backups of the ledger run at midnight")
    server.close()  # a clean stop: the WAL folded in and removed
    disk.fill()
    caplog.set_level(logging.INFO)
    server = start_server(on_disk, embedder)  # does not raise
    try:
        loud = [r for r in caplog.records if r.getMessage().startswith("READ-ONLY")]
        assert len(loud) == 1 and loud[0].levelno == logging.WARNING
        assert health(server) == NOT_SERVING
        hits = server.store.Search(s.SearchRequest(query="when do ledger backups run?"))
        assert [h.memory.id for h in hits.hits] == [kept.id]
        err = refused(lambda: upsert(server, "The ledger moves to a new host"))
        assert err.code() == grpc.StatusCode.RESOURCE_EXHAUSTED and reason(err) == "DISK_FULL"
        assert str(Path(on_disk.data_dir) / "memsidecar.sqlite3") in (err.details() or "")
        no_tracebacks(caplog)

        disk.free()
        wait_for(lambda: health(server) == SERVING)
        upsert(server, "The ledger moves to a new host")
        assert server.store.Search(s.SearchRequest(query="ledger new host")).hits
    finally:
        server.close()
    no_tracebacks(caplog)


def test_start_on_read_only_disk_serves_reads_then_writes_once_writable(
        on_disk: ServerConfig, disk: SmallDisk, embedder: Embedder,
        caplog: pytest.LogCaptureFixture) -> None:
    server = start_server(on_disk, embedder)
    kept = upsert(server, "The mail relay rotates its keys weekly")
    server.close()
    disk.read_only()
    caplog.set_level(logging.INFO)
    server = start_server(on_disk, embedder)
    try:
        assert health(server) == NOT_SERVING
        hits = server.store.Search(s.SearchRequest(query="mail relay keys"))
        assert [h.memory.id for h in hits.hits] == [kept.id]
        for name, call in writes(server, 3).items():
            err = refused(call)
            assert err.code() == grpc.StatusCode.FAILED_PRECONDITION, name
            assert reason(err) == "NOT_WRITABLE", name
            assert "is not writable" in (err.details() or ""), name
            assert str(on_disk.data_dir) in (err.details() or ""), name
        assert refusals(server, "NOT_WRITABLE") == 4
        no_tracebacks(caplog)

        disk.writable()
        wait_for(lambda: health(server) == SERVING)  # reopened read-write
        for call in writes(server, 4).values():
            call()
    finally:
        server.close()
    no_tracebacks(caplog)


def test_a_migration_on_a_full_disk_stops_with_one_clear_error(disk: SmallDisk) -> None:
    path = disk.root / "old.sqlite3"
    with closing(sqlite3.connect(path)) as old:  # schema version 0: every migration to run
        old.execute("PRAGMA journal_mode=WAL")
        old.execute("CREATE TABLE notes (body TEXT)")
    disk.fill()
    with pytest.raises(DiskFull) as caught:
        Database(path)
    assert caught.value.message.startswith(f"{path} needs migrating to schema version")
    assert caught.value.message.endswith("then start the sidecar again")


def test_write_behind_survives_a_refused_group(disk: SmallDisk,
                                               caplog: pytest.LogCaptureFixture) -> None:
    db = Database(disk.root / "store.sqlite3")
    db.execute("CREATE TABLE notes (body TEXT)")
    writer = WriteBehind(db)
    try:
        def note(body: str) -> None:
            def job() -> None:
                db.execute("INSERT INTO notes VALUES (?)", (body * 4096,))
            writer.submit(job)

        disk.fill()
        note("a")
        writer.flush()
        assert writer.failures == 1 and db.faults.counts["DISK_FULL"] == 1
        assert db.faults.current is not None
        disk.free()
        note("b")
        writer.flush()
        rows = db.execute("SELECT substr(body, 1, 1) FROM notes")
        assert [r[0] for r in rows] == ["b"]  # the later write is not lost
        assert db.faults.current is None  # and it cleared the state
        assert writer.failures == 1
    finally:
        writer.close()
        db.close()
    no_tracebacks(caplog)
