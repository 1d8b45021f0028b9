"""memsidecar_client's agent-loop calls on a real sidecar: PruneHistory with the channel,
wait_ready, and imports from an iterator."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import replace

import pytest
from grpc_health.v1 import health_pb2
from memsidecar.v1 import memory_pb2, store_pb2
from memsidecar_client import Client, DeadlineExceededError, RetryPolicy, memory_type

from sidecar.api.server import create_server
from sidecar.api.server_config import ServerConfig
from sidecar.app import App
from sidecar.embedding import Embedder
from tests.clients.test_python_client import Retries, free_port
from tests.conftest import Running

PATIENT = RetryPolicy(max_attempts=2, initial_backoff_s=0.05, max_backoff_s=0.25)
QUESTION = "Which database does billing use?"


def test_prune_with_the_channel_releases_a_memory_whose_block_left(running: Running) -> None:
    with Client(running.target) as client:
        db = client.upsert("We chose PostgreSQL 16 for the billing database.", "decision").memory
        first = client.inject(QUESTION, channel_id="prune-ch")
        assert db.id in [item.id for item in first.items]
        history = [("user", first.block), ("user", QUESTION), ("assistant", "PostgreSQL.")]
        again = client.inject(QUESTION, channel_id="prune-ch")
        assert db.id not in [item.id for item in again.items]  # the history still shows it
        pruned = client.prune_history(history, max_keep=1, channel_id="prune-ch")
        assert list(pruned.removed_indices) == [0] and list(pruned.released_turns) == [1]
        back = client.inject(QUESTION, channel_id="prune-ch")
    assert db.id in [item.id for item in back.items]


def test_wait_ready_returns_on_a_serving_sidecar(running: Running) -> None:
    with Client(running.target) as client:
        client.wait_ready(30)


def test_wait_ready_waits_while_not_serving(running: Running) -> None:
    health = running.server.health
    health.set("", health_pb2.HealthCheckResponse.NOT_SERVING)
    retries = Retries()
    done: list[BaseException | None] = []
    with Client(running.target, retry=PATIENT) as client, \
            pytest.raises(DeadlineExceededError, match="not SERVING within 0.2 s"):
        client.wait_ready(0.2)
    with Client(running.target, retry=PATIENT, on_retry=retries) as client:
        worker = threading.Thread(target=lambda: done.append(client.wait_ready(60)))
        worker.start()
        assert retries.first.wait(30), "wait_ready never asked again"
        health.set("", health_pb2.HealthCheckResponse.SERVING)
        worker.join(30)
    assert done == [None] and retries.seen[-1][0] == "Health.Check"


def test_wait_ready_retries_until_the_sidecar_listens(config: ServerConfig,
                                                      embedder: Embedder) -> None:
    port = free_port()
    retries = Retries()
    done: list[BaseException | None] = []
    with Client(f"127.0.0.1:{port}", retry=PATIENT, on_retry=retries) as client:
        worker = threading.Thread(target=lambda: done.append(client.wait_ready(120)))
        worker.start()
        assert retries.first.wait(30), "wait_ready never retried"
        server = create_server(App.open(replace(config, listen=f"127.0.0.1:{port}"),
                                        embedder=embedder))
        server.start()
        try:
            worker.join(60)
        finally:
            server.stop(grace=1)
    assert done == [None]


def memories(n: int, seen: list[int]) -> Iterator[memory_pb2.Memory]:
    """``n`` memories, each recorded in ``seen`` when the import reads it."""
    for i in range(n):
        seen.append(i)
        yield memory_pb2.Memory(content=f"Streamed note {i} about the release train",
                                type=memory_type("fact"), agent_id="stream")


def test_import_from_an_iterator_reads_it_as_batches_go(running: Running) -> None:
    seen: list[int] = []
    progress: list[tuple[int, int, int]] = []
    with Client(running.target) as client:
        summary = client.import_batches(
            memories(25, seen), batch_size=2,
            progress=lambda done, total: progress.append((done, total, len(seen))))
        assert (summary.received, summary.stored, len(summary.ids)) == (25, 25, 25)
        assert [p[:2] for p in progress] == [(d, 0) for d in (*range(2, 25, 2), 25)]
        assert all(read < 25 for _, _, read in progress[:3])  # not read all at once
        assert len(list(client.iter_memories(agent_id="stream"))) == 25


def test_an_iterator_failure_is_raised_after_what_was_acknowledged(running: Running) -> None:
    def broken() -> Iterator[store_pb2.ImportItem]:
        yield store_pb2.ImportItem(memory=memory_pb2.Memory(content="Kept before the fault",
                                                            type=memory_type("fact")))
        raise OSError("disk gone")

    with Client(running.target) as client:
        acks = []
        with pytest.raises(OSError, match="disk gone"):
            for ack in client.import_stream(broken(), batch_size=1):
                acks.append(ack)
        assert [a.committed for a in acks] == [1]
