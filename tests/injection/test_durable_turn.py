"""kill -9 right after an acknowledged Inject: the retried turn gets the very same reply from
the restarted sidecar (the turn is committed before its reply leaves)."""

from __future__ import annotations

import subprocess
from pathlib import Path

from memsidecar.v1 import injection_pb2 as inj
from memsidecar.v1 import injection_pb2_grpc, store_pb2_grpc
from memsidecar.v1 import memory_pb2 as m
from memsidecar.v1 import store_pb2 as s

from tests.test_cli import free_port, spawn, wait_serving
from tests.waiting import wait_for

FACTS = ("The staging database runs on host db-7 in the Frankfurt region",
         "Deploys to production happen on Tuesdays after the standup",
         "The on-call rotation changes every Monday at 9am",
         "Billing exports are written to the ledger bucket nightly")
KILLS = 3


def serve(data: Path) -> tuple[subprocess.Popen[bytes], str]:
    target = f"127.0.0.1:{free_port()}"
    return spawn(target, data), target


def kill(proc: subprocess.Popen[bytes]) -> None:
    proc.kill()  # SIGKILL: no drain, no clean close
    proc.wait()
    if proc.stdout is not None:
        proc.stdout.close()


def test_retried_turn_after_kill_9_returns_the_same_block(tmp_path: Path) -> None:
    data = tmp_path / "served"
    data.mkdir()
    proc, target = serve(data)
    try:
        channel = wait_serving(target, proc)
        store = store_pb2_grpc.MemoryStoreStub(channel)
        for fact in FACTS:
            store.UpsertMemory(s.UpsertMemoryRequest(memory=m.Memory(
                content=fact, type=m.MEMORY_TYPE_FACT, agent_id="ops")))
        for turn in range(1, KILLS + 1):
            request = inj.InjectRequest(agent_id="ops", channel_id="c", turn=turn,
                                        text=f"{FACTS[turn - 1]}? (question {turn})")
            first = injection_pb2_grpc.MemoryInjectionStub(channel).Inject(request)
            kill(proc)  # at once after the acknowledged reply
            channel.close()
            proc, target = serve(data)
            channel = wait_serving(target, proc)
            again = injection_pb2_grpc.MemoryInjectionStub(channel).Inject(request)
            assert first.block, "the turn injected something (the test needs a block)"
            assert again.block == first.block
            assert again.turn == first.turn == turn
            assert [i.id for i in again.items] == [i.id for i in first.items]
        channel.close()
    finally:
        kill(proc)


def captures(store: store_pb2_grpc.MemoryStoreStub) -> list[str]:
    listed = store.ListMemories(s.ListMemoriesRequest(agent_id="ops", source="capture"))
    return sorted(x.content for x in listed.memories)


def test_a_capture_of_an_acknowledged_turn_survives_kill_9(tmp_path: Path) -> None:
    """The capture rides on the turn's own transaction: killed at once after each reply, the
    restarted sidecar still writes every acknowledged turn's memory, each once."""
    data = tmp_path / "served"
    data.mkdir()
    (data / "memsidecar.toml").write_text('[defaults.memory_injection]\ncapture = "user"\n')
    proc, target = serve(data)
    try:
        channel = wait_serving(target, proc)
        for turn in range(1, KILLS + 1):
            injection_pb2_grpc.MemoryInjectionStub(channel).Inject(inj.InjectRequest(
                agent_id="ops", channel_id="c", turn=turn, text=FACTS[turn - 1]))
            kill(proc)
            channel.close()
            proc, target = serve(data)
            channel = wait_serving(target, proc)
            store = store_pb2_grpc.MemoryStoreStub(channel)
            wait_for(lambda: len(captures(store)) >= turn)  # noqa: B023 (called in this turn)
            assert captures(store) == sorted(FACTS[:turn])
        channel.close()
    finally:
        kill(proc)
