"""kill -9 of a sidecar on PostgreSQL in the middle of an import and of upserts, and in the
middle of an ImportMemoriesStream: every acknowledged write is in the store, committed batches
are whole, another sidecar loads exactly what was committed, and a resent stream stores
nothing twice."""

from __future__ import annotations

import random
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import grpc
import psycopg
import pytest
from memsidecar.v1 import memory_pb2 as m
from memsidecar.v1 import store_pb2 as s
from memsidecar.v1 import store_pb2_grpc

from sidecar.api.server_config import ServerConfig
from sidecar.embedding import Embedder
from sidecar.store.postgres.dsn import DSN_ENV
from tests.pg.sidecars import open_app
from tests.test_cli import free_port, spawn, wait_serving
from tests.waiting import wait_for

WORDS = ("alpha billing cache deploy edge failover gateway host index job kernel ledger "
         "mirror node owner pager queue replica shard token upgrade vault worker zone").split()
BATCH = 256  # MemoryService.import_stream's default batch


def content(rng: random.Random, tag: str, n: int) -> str:
    return f"{tag} {n}: " + " ".join(rng.choice(WORDS) for _ in range(12))


def count(dsn: str, source: str) -> int:
    with psycopg.connect(dsn) as conn:
        row = conn.execute("SELECT count(*) FROM memories WHERE source = %s", (source,))
        return int(row.fetchone()[0])  # type: ignore[index]


def test_kill_9_mid_import(tmp_path: Path, pg_dsn: str, config: ServerConfig,
                           embedder: Embedder, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(DSN_ENV, pg_dsn)
    data = tmp_path / "served"
    data.mkdir()
    (data / "memsidecar.toml").write_text('[store]\nbackend = "postgres"\n')
    target = f"127.0.0.1:{free_port()}"
    proc = spawn(target, data)
    try:
        stub = store_pb2_grpc.MemoryStoreStub(wait_serving(target, proc))
        acked: list[str] = []
        rng = random.Random(5)

        def items() -> Iterator[s.UpsertMemoryRequest]:
            for n in range(5000):
                yield s.UpsertMemoryRequest(memory=m.Memory(
                    content=content(rng, "imported", n), type=m.MEMORY_TYPE_FACT,
                    source="import"))

        def upserts() -> None:
            for n in range(100_000):
                try:
                    reply = stub.UpsertMemory(s.UpsertMemoryRequest(memory=m.Memory(
                        content=content(random.Random(n), "upserted", n),
                        type=m.MEMORY_TYPE_FACT, source="upsert")))
                except grpc.RpcError:
                    return
                acked.append(reply.memory.id)

        def imports() -> None:
            try:
                stub.ImportMemories(items())
            except grpc.RpcError:
                pass

        threads = [threading.Thread(target=upserts), threading.Thread(target=imports)]
        for thread in threads:
            thread.start()
        wait_for(lambda: count(pg_dsn, "import") >= BATCH and len(acked) >= 3)
        proc.kill()  # SIGKILL: no drain, no clean close
        proc.wait()
        for thread in threads:
            thread.join()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    imported = count(pg_dsn, "import")
    assert imported % BATCH == 0  # whole batches only
    with psycopg.connect(pg_dsn) as conn:
        stored = {r[0] for r in conn.execute("SELECT id FROM memories WHERE source = 'upsert'")}
    assert set(acked) <= stored  # every acknowledged upsert
    assert len(stored) - len(acked) <= 1  # at most the one in flight at the kill
    other = open_app(config, "other", embedder, pg_dsn)
    try:
        assert len(other.retriever.live) == imported + len(stored)
    finally:
        other.close()


def stream_batches(count: int, size: int) -> list[s.ImportBatch]:
    rng = random.Random(7)
    return [s.ImportBatch(sequence=b, items=[s.ImportItem(memory=m.Memory(
        id=f"s-{b}-{n}", content=content(rng, "streamed", b * size + n),
        type=m.MEMORY_TYPE_FACT, source="stream")) for n in range(size)])
        for b in range(count)]


def test_kill_9_mid_stream_import_then_resend(tmp_path: Path, pg_dsn: str,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """Every acknowledged batch survives the kill; resending the whole stream to another
    sidecar stores each item once (the committed ones count as deduplicated)."""
    monkeypatch.setenv(DSN_ENV, pg_dsn)
    batches = stream_batches(60, 20)
    acked: list[str] = []

    def send(stub: store_pb2_grpc.MemoryStoreStub) -> list[s.ImportBatchAck]:
        acks: list[s.ImportBatchAck] = []
        try:
            for ack in stub.ImportMemoriesStream(iter(batches)):
                acks.append(ack)
                acked.extend(ack.ids)
        except grpc.RpcError:
            pass
        return acks

    first = served(tmp_path / "first")
    try:
        stub = store_pb2_grpc.MemoryStoreStub(first[1])
        sender = threading.Thread(target=send, args=(stub,))
        sender.start()
        wait_for(lambda: len(acked) >= 3 * 20)
        first[0].kill()  # SIGKILL mid-stream
        first[0].wait()
        sender.join()
    finally:
        stop(first[0])
    committed = count(pg_dsn, "stream")
    assert committed % 20 == 0 and committed < 60 * 20  # whole batches, stopped mid-stream
    with psycopg.connect(pg_dsn) as conn:
        stored = {r[0] for r in conn.execute("SELECT id FROM memories WHERE source = 'stream'")}
    assert set(acked) <= stored
    second = served(tmp_path / "second")
    try:
        acks = send(store_pb2_grpc.MemoryStoreStub(second[1]))
    finally:
        stop(second[0])
    assert [a.sequence for a in acks] == list(range(60))
    assert sum(a.deduplicated for a in acks) == committed
    assert sum(a.committed for a in acks) == 60 * 20 - committed
    assert count(pg_dsn, "stream") == 60 * 20


def served(data: Path) -> tuple[subprocess.Popen[bytes], grpc.Channel]:
    """A ``serve`` process on the PostgreSQL store named by MEMSIDECAR_STORE_DSN."""
    data.mkdir()
    (data / "memsidecar.toml").write_text('[store]\nbackend = "postgres"\n')
    target = f"127.0.0.1:{free_port()}"
    proc = spawn(target, data)
    try:
        return proc, wait_serving(target, proc)
    except BaseException:
        stop(proc)
        raise


def stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.kill()
        proc.wait()
