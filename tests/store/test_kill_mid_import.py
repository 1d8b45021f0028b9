"""kill -9 of a sidecar on PostgreSQL in the middle of an import and of upserts: every
acknowledged write is in the store, the import's committed batches are whole, and another
sidecar loads exactly what was committed."""

from __future__ import annotations

import random
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
from tests.pg.sidecars import open_app, wait_for
from tests.test_cli import free_port, spawn, wait_serving

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
