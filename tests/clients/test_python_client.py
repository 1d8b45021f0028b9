"""memsidecar_client against a real sidecar: calls, typed errors, deadlines, retries."""

from __future__ import annotations

import socket
import threading
from dataclasses import replace

import grpc
import pytest
from memsidecar.v1 import injection_pb2, memory_pb2, store_pb2
from memsidecar_client import (
    BLOCK_PREFIX,
    Client,
    DeadlineExceededError,
    InvalidArgumentError,
    MemsidecarError,
    NotFoundError,
    RetryPolicy,
    UnavailableError,
    memory_type,
    message,
)

from sidecar.api.server import create_server
from sidecar.api.server_config import ServerConfig
from sidecar.app import App
from sidecar.embedding import Embedder
from tests.conftest import Running

FAST = RetryPolicy(max_attempts=4, initial_backoff_s=0.01, max_backoff_s=0.05)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Retries:
    """on_retry hook recording (rpc, attempt) and signalling the first retry."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, int]] = []
        self.first = threading.Event()

    def __call__(self, rpc: str, attempt: int, err: MemsidecarError, sleep_s: float) -> None:
        assert isinstance(err, UnavailableError) and err.code == grpc.StatusCode.UNAVAILABLE
        self.seen.append((rpc, attempt))
        self.first.set()


def test_store_roundtrip(running: Running) -> None:
    with Client(running.target) as client:
        created = client.upsert("We picked PostgreSQL for billing", "decision", agent_id="py")
        assert created.created and created.memory.importance == pytest.approx(0.8)
        others = [client.upsert(f"Observation number {i} about the build", "observation",
                                agent_id="py").memory.id for i in range(3)]
        assert client.get(created.memory.id, agent_id="py") == created.memory
        listed = client.list(agent_id="py", types=["decision"])
        assert [m.id for m in listed.memories] == [created.memory.id]
        paged = [m.id for m in client.iter_memories(agent_id="py", page_size=2)]
        assert sorted(paged) == sorted([created.memory.id, *others])
        edge = client.add_edge(others[0], created.memory.id, memory_pb2.RELATION_RELATED_TO, 0.7,
                               agent_id="py")
        assert edge.weight == pytest.approx(0.7)
        client.remove_edge(others[0], created.memory.id, memory_pb2.RELATION_RELATED_TO,
                           agent_id="py")
        forgotten = client.forget(others[1], source="test", agent_id="py")
        assert forgotten.changed and forgotten.memory.forgotten
        assert others[1] not in [m.id for m in client.iter_memories(agent_id="py")]
        summary = client.import_memories(
            memory_pb2.Memory(content=text, type=memory_type("fact")) for text in ("a fact", " "))
        assert (summary.stored, summary.rejected, summary.errors[0].index) == (1, 1, 1)


def test_invalid_argument_carries_code_details_and_trailers(running: Running) -> None:
    with Client(running.target) as client, pytest.raises(InvalidArgumentError) as info:
        client.upsert("   ", "fact")
    err = info.value
    assert err.code == grpc.StatusCode.INVALID_ARGUMENT
    assert err.field == "memory.content" and err.reason and "memory.content" in str(err)
    assert err.trailers["memsidecar-field"] == "memory.content" and err.details


def test_not_found_and_deadline_are_typed(running: Running) -> None:
    with Client(running.target) as client:
        with pytest.raises(NotFoundError) as info:
            client.get("no-such-id")
        assert info.value.code == grpc.StatusCode.NOT_FOUND
        with pytest.raises(NotFoundError):
            client.remove_edge("a", "b", memory_pb2.RELATION_RELATED_TO)
        slow = (memory_pb2.Memory(content=f"Imported note {i} on the build", type=6)
                for i in range(500))
        with pytest.raises(DeadlineExceededError) as late:
            client.import_memories(slow, timeout_s=0.05)
        assert late.value.code == grpc.StatusCode.DEADLINE_EXCEEDED


def test_unavailable_reads_retry_until_the_policy_gives_up() -> None:
    retries = Retries()
    with Client(f"127.0.0.1:{free_port()}", retry=FAST, on_retry=retries) as client:
        with pytest.raises(UnavailableError):
            client.get("x")
    assert retries.seen == [("GetMemory", 1), ("GetMemory", 2), ("GetMemory", 3)]


@pytest.mark.parametrize("call", [
    lambda c: c.upsert("new memory, no id", "fact"),
    lambda c: c.inject("hello", channel_id="c1"),
    lambda c: c.import_memories([memory_pb2.Memory(content="x", type=memory_type("fact"))]),
    lambda c: c.forget("some-id"),
    lambda c: c.forget_user("support", "alice"),
    lambda c: c.reset_channel("c1"),
])
def test_non_idempotent_calls_are_never_retried(call: object) -> None:
    retries = Retries()
    with Client(f"127.0.0.1:{free_port()}", retry=FAST, on_retry=retries) as client:
        with pytest.raises(UnavailableError):
            call(client)  # type: ignore[operator]
    assert retries.seen == []


def test_read_retried_while_the_sidecar_comes_up(config: ServerConfig,
                                                 embedder: Embedder) -> None:
    port = free_port()
    retries = Retries()
    patient = RetryPolicy(max_attempts=60, initial_backoff_s=0.05, max_backoff_s=0.25)
    result: list[store_pb2.ListMemoriesResponse | BaseException] = []
    with Client(f"127.0.0.1:{port}", retry=patient, on_retry=retries) as client:
        def call() -> None:
            try:
                result.append(client.list())
            except BaseException as err:  # reported by the assertion below
                result.append(err)

        worker = threading.Thread(target=call)
        worker.start()
        assert retries.first.wait(10), "the client never retried"
        app = App.open(replace(config, listen=f"127.0.0.1:{port}"), embedder=embedder)
        server = create_server(app)
        server.start()
        try:
            worker.join(30)
        finally:
            server.stop(grace=1)
    assert len(result) == 1 and isinstance(result[0], store_pb2.ListMemoriesResponse), result
    assert len(retries.seen) >= 1 and all(rpc == "ListMemories" for rpc, _ in retries.seen)


def blocks(client: Client, n: int) -> list[str]:
    """``n`` blocks as the server gives them out (only those are recognised as blocks)."""
    client.upsert("We chose PostgreSQL 16 for the billing database.", "decision")
    return [client.inject("billing database", channel_id=f"blocks-{i}").block for i in range(n)]


def test_prune_history_drops_oldest_blocks(running: Running) -> None:
    with Client(running.target) as client:
        one, two, three = blocks(client, 3)
        history = [("system", "sys"), ("user", one), ("user", "q1"), ("assistant", "a1"),
                   ("user", two), ("user", "q2"), ("user", three), ("user", "q3")]
        reply = client.prune_history(history, max_keep=2)
    assert list(reply.removed_indices) == [1, 4]
    assert [(m.role, m.content) for m in reply.messages] == [
        (message(r, c).role, c) for i, (r, c) in enumerate(history) if i not in (1, 4)]


def test_render_transcript_leaves_blocks_out(running: Running) -> None:
    with Client(running.target) as client:
        (block,) = blocks(client, 1)
        history = [message("user", block), message("user", "q1"),
                   message("assistant", "a1"), message("assistant", f"{BLOCK_PREFIX} quoted")]
        reply = client.render_transcript(history)
    assert reply.blocks_skipped == 1
    assert "PostgreSQL" not in reply.transcript
    assert "q1" in reply.transcript and "a1" in reply.transcript


def test_channel_turn_loop(running: Running) -> None:
    """The seed's channel turn: prune, inject, append the block, and a final render."""
    with Client(running.target) as client:
        db = client.upsert("We chose PostgreSQL 16 for the billing database.", "decision").memory
        deploy = client.upsert("Deploys go to the Kubernetes cluster every Friday.", "fact").memory
        history: list[injection_pb2.Message] = [message("system", "You are an agent.")]
        for text, expected in (("Which database does billing use?", db.id),
                               ("When do we deploy to Kubernetes?", deploy.id)):
            history = list(client.prune_history(history, max_keep=2).messages)
            reply = client.inject(text, channel_id="py-loop")
            assert reply.block.startswith(BLOCK_PREFIX), reply
            assert expected in [item.id for item in reply.items]
            history += [message("user", reply.block), message("user", text),
                        message("assistant", "ok")]
        history = list(client.prune_history(history, max_keep=2).messages)
        assert sum(m.content.startswith(BLOCK_PREFIX) for m in history) == 1
        transcript = client.render_transcript(history)
        (last,) = client.get_injection_trace("py-loop", last_n=1).turns
    assert last.turn == 2 and deploy.id in [item.id for item in last.injected]
    assert BLOCK_PREFIX not in transcript.transcript and transcript.blocks_skipped == 1


def test_get_config_returns_effective_values(running: Running) -> None:
    with Client(running.target) as client:
        reply = client.get_config("py-agent")
    assert reply.agent_id == "py-agent" and reply.memory_injection.HasField("enabled")


def test_input_helpers_reject_unknown_names() -> None:
    assert memory_type("todo") == memory_type("MEMORY_TYPE_TODO") == memory_pb2.MEMORY_TYPE_TODO
    with pytest.raises(ValueError, match="memory type"):
        memory_type("nonsense")
    with pytest.raises(ValueError, match="role"):
        message("robot", "x")


def test_backoff_grows_and_is_capped() -> None:
    policy = RetryPolicy(initial_backoff_s=0.1, max_backoff_s=0.5, multiplier=2.0, jitter=0.2)
    sleeps = [policy.backoff(n) for n in range(1, 6)]
    assert 0.08 <= sleeps[0] <= 0.1 and 0.16 <= sleeps[1] <= 0.2
    assert all(0.4 <= s <= 0.5 for s in sleeps[3:])


def test_a_history_past_4_mib_comes_back_whole(running: Running) -> None:
    """The sidecar takes requests of up to `max_message_bytes` (16 MiB); a PruneHistory or
    RenderTranscript reply is about as large, so the client takes replies that large too."""
    with Client(running.target, timeout_s=60) as client:
        (block,) = blocks(client, 1)
        turn = "a long pasted log line that the user keeps sending " * 20  # ~1 KB
        history = [message("user", block)] + [
            message("user" if i % 2 else "assistant", f"{i} {turn}") for i in range(6000)]
        assert sum(len(m.content) for m in history) > 5 * 1024 * 1024
        pruned = client.prune_history(history, max_keep=1, channel_id="blocks-0")
        transcript = client.render_transcript(history)
    assert list(pruned.removed_indices) == [0] and len(pruned.messages) == 6000
    assert transcript.blocks_skipped == 1 and transcript.transcript.count(turn) == 6000
