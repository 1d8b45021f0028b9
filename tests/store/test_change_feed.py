"""Sidecars sharing one PostgreSQL: each follows the others' writes through the change feed."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import psycopg
import pytest
from memsidecar.v1 import memory_pb2 as m
from memsidecar.v1 import store_pb2 as s

from sidecar.api.server_config import ServerConfig
from sidecar.app import App
from sidecar.embedding import Embedder
from sidecar.records import MemoryDraft, MemoryType, Relation, Restored
from tests.conftest import Running, start_server
from tests.pg.sidecars import found, open_app
from tests.waiting import wait_for


@pytest.fixture
def apps(config: ServerConfig, embedder: Embedder, pg_dsn: str) -> Iterator[list[App]]:
    opened = [open_app(config, name, embedder, pg_dsn) for name in "abc"]
    yield opened
    for app in opened:
        app.close()


def test_writes_on_one_reach_the_others(apps: list[App]) -> None:
    a, b, c = apps
    first = a.memories.upsert(MemoryDraft("The staging database restarts at noon",
                                          MemoryType.FACT)).memory
    wait_for(lambda: found(b, "when does staging restart?", first.id))
    wait_for(lambda: found(c, "when does staging restart?", first.id))
    second = b.memories.upsert(MemoryDraft("Staging backups run hourly", MemoryType.FACT)).memory
    c.memories.add_edge(second.id, first.id, Relation.RELATED_TO, None)
    wait_for(lambda: len(a.retriever.graph) == 1)  # the edge
    c.memories.forget(first.id)
    wait_for(lambda: not found(a, "when does staging restart?", first.id)
             and not found(b, "when does staging restart?", first.id))
    assert a.retriever.live.seq_of(first.id) is None


def test_an_import_batch_reaches_the_others(apps: list[App]) -> None:
    """ImportMemoriesStream's batches (restores included) are feed events like any write."""
    a, b, _ = apps
    kept = Restored(created_at=1_000, updated_at=2_000, version=3, forgotten=False)
    gone = replace(kept, forgotten=True)
    summary = a.memories.import_batch([
        MemoryDraft("The billing export runs at dawn", MemoryType.FACT, id="r-live",
                    restored=kept),
        MemoryDraft("The billing export ran at midnight", MemoryType.FACT, id="r-gone",
                    restored=gone),
        MemoryDraft("Invoices are archived for ten years", MemoryType.FACT)])
    assert (summary.stored, summary.rejected) == (3, 0)
    wait_for(lambda: found(b, "when does the billing export run?", "r-live")
             and b.retriever.live.seq_of(summary.ids[2]) is not None)
    assert b.retriever.live.seq_of("r-gone") is None
    resent = b.memories.import_batch([
        MemoryDraft("The billing export runs at dawn", MemoryType.FACT, id="r-live",
                    restored=kept)])
    assert (resent.stored, resent.deduplicated) == (0, 1)


def test_feed_resumes_after_its_connection_is_cut(apps: list[App], pg_dsn: str) -> None:
    a, b, _ = apps
    with psycopg.connect(pg_dsn, autocommit=True) as admin:
        admin.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE "
                      "query LIKE 'LISTEN%' AND pid != pg_backend_pid()")
    written = a.memories.upsert(MemoryDraft("Rotate the signing key in March",
                                            MemoryType.TODO)).memory
    wait_for(lambda: found(b, "signing key rotation", written.id))


def test_a_gap_older_than_the_retention_reloads(apps: list[App]) -> None:
    a, b, _ = apps
    assert b.feed is not None and a.feed is not None
    b.feed.close()  # b stops listening; a keeps writing
    written = a.memories.upsert(MemoryDraft("The VPN certificate expires in June",
                                            MemoryType.FACT)).memory
    a.feed.retention_s = 0
    a.feed.prune()  # every change so far is past the retention
    assert b.feed.catch_up() == 0 and b.feed.reloads == 1
    assert found(b, "VPN certificate expiry", written.id)


def test_search_over_grpc_on_another_sidecar(config: ServerConfig, embedder: Embedder,
                                             pg_dsn: str, monkeypatch: pytest.MonkeyPatch
                                             ) -> None:
    monkeypatch.setenv("MEMSIDECAR_STORE_DSN", pg_dsn)
    servers: list[Running] = []
    for name in "ab":
        mine = replace(config, data_dir=f"{config.data_dir}-{name}")
        Path(mine.data_dir).mkdir(parents=True)
        (Path(mine.data_dir) / "memsidecar.toml").write_text('[store]\nbackend = "postgres"\n')
        servers.append(start_server(mine, embedder))
    try:
        wrote = servers[0].store.UpsertMemory(s.UpsertMemoryRequest(memory=m.Memory(
            content="Payroll runs on the 25th", type=m.MEMORY_TYPE_FACT)))

        def on_b() -> bool:
            reply = servers[1].store.Search(s.SearchRequest(query="when is payroll?"))
            return wrote.memory.id in [h.memory.id for h in reply.hits]
        wait_for(on_b)
    finally:
        for server in servers:
            server.close()
