"""The agent-loop templates (Go, Rust, Python) name the end user (`--user`) on every Inject:
a memory private to one user reaches that user's turns and never another's."""

from __future__ import annotations

import pytest
from memsidecar.v1 import memory_pb2, store_pb2

from tests.clients.agent_loops import LANGUAGES, loop_command, run
from tests.conftest import Running

AGENT = "agent-loop-example"  # the templates' default --agent
PRIVATE = "My dog is called Giruruka and she loves the beach."
TURNS = "What is my dog called?\nAnd where does my dog like to go?\n"


@pytest.mark.parametrize("language", LANGUAGES)
def test_each_turn_sees_its_users_memories_only(language: str, running: Running,
                                                request: pytest.FixtureRequest) -> None:
    running.store.UpsertMemory(store_pb2.UpsertMemoryRequest(memory=memory_pb2.Memory(
        content=PRIVATE, type=memory_pb2.MEMORY_TYPE_FACT, agent_id=AGENT, user_id="alice")))
    command = loop_command(language, request)
    for user, sees in (("alice", True), ("bob", False)):
        out = run(command, running.target, "--channel", f"{language}-{user}", "--user", user,
                  stdin=TURNS)
        assert out.code == 0, out.stderr
        blocks = [turn.block for turn in out.turns()]
        assert len(blocks) == 2
        assert any("Giruruka" in block for block in blocks) is sees, (user, blocks)
