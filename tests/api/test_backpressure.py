"""Backpressure, deadlines and interrupted imports against a real server.

A client-streamed ImportMemories whose request stream waits on an Event holds its admission
slot (and its worker) for as long as the test wants: no sleeps decide the outcome.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from memsidecar.v1 import memory_pb2 as m
from memsidecar.v1 import store_pb2 as s
from memsidecar.v1 import vault_pb2 as v

from sidecar import deadline
from sidecar.api.server_config import ServerConfig
from sidecar.app import App
from sidecar.embedding import Embedder
from sidecar.errors import DeadlineExceeded
from sidecar.records import MemoryDraft, MemoryType
from tests.conftest import Running, start_server
from tests.waiting import wait_for


def memory(text: str) -> s.UpsertMemoryRequest:
    return s.UpsertMemoryRequest(memory=m.Memory(content=text, type=m.MEMORY_TYPE_FACT))


def held_import(live: Running, release: threading.Event, items: int = 0) -> grpc.Future:
    """An import that sends ``items`` memories, then waits for ``release``."""
    def stream() -> Iterator[s.UpsertMemoryRequest]:
        for i in range(items):
            yield memory(f"Imported fact number {i} about project {i * 7}")
        release.wait()

    return live.store.ImportMemories.future(stream())


@pytest.fixture
def small(tmp_path: Path, embedder: Embedder) -> Iterator[Running]:
    config = ServerConfig(listen="127.0.0.1:0", data_dir=str(tmp_path / "data"),
                          max_workers=1, max_concurrent_rpcs=2)
    live = start_server(config, embedder)
    yield live
    live.close()


def wait_admitted(live: Running, calls: int) -> None:
    wait_for(lambda: live.server.admission.admitted >= calls)
    assert live.server.admission.admitted == calls


def wait_working(live: Running, calls: int) -> None:
    """Until ``calls`` calls hold a worker (not merely admitted and still queued)."""
    wait_for(lambda: live.server.admission.working >= calls)
    assert live.server.admission.working == calls


def live_count(live: Running) -> int:
    return live.vault.VaultStats(v.VaultStatsRequest()).live


def test_over_the_bound_is_resource_exhausted_and_health_still_answers(small: Running) -> None:
    release = threading.Event()
    first = held_import(small, release)  # holds the one worker
    second = held_import(small, release)  # admitted, waits for the worker
    wait_admitted(small, 2)
    with pytest.raises(grpc.RpcError) as info:
        small.store.Search(s.SearchRequest(query="anything"))
    assert info.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED  # type: ignore[attr-defined]
    assert "max_concurrent_rpcs" in info.value.details()  # type: ignore[attr-defined]
    health = health_pb2_grpc.HealthStub(small.channel)
    for _ in range(20):
        assert health.Check(health_pb2.HealthCheckRequest()).status == \
            health_pb2.HealthCheckResponse.SERVING
    release.set()
    assert first.result().received == 0 and second.result().received == 0
    small.store.Search(s.SearchRequest(query="anything"))


def test_a_call_that_expires_while_queued_changes_nothing(small: Running) -> None:
    release = threading.Event()
    holder = held_import(small, release)
    wait_working(small, 1)  # the import holds the one worker
    with pytest.raises(grpc.RpcError) as info:
        small.store.UpsertMemory(memory("The deadline passed before the worker was free"),
                                 timeout=0.3)
    assert info.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED  # type: ignore[attr-defined]
    release.set()
    holder.result()
    wait_for(lambda: small.server.admission.admitted == 0)  # the expired call's handler left
    assert live_count(small) == 0


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
