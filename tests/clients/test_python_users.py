"""memsidecar_client and end users against a real sidecar: user_id on a memory, in Search,
Inject and the ListMemories filter, in JSON Lines records; forget_user and forget(hard=True)."""

from __future__ import annotations

import pytest
from memsidecar.v1 import store_pb2
from memsidecar_client import (
    Client,
    NotFoundError,
    item_from_dict,
    memory_from_dict,
    memory_to_dict,
)

from tests.conftest import Running

AGENT = "support"
DOG = "My dog is called Giruruka and she loves the beach."
ASK = "What is my dog called?"


def ids(reply: store_pb2.SearchResponse) -> set[str]:
    return {hit.memory.id for hit in reply.hits}


def test_a_users_memory_is_theirs_alone(running: Running) -> None:
    with Client(running.target) as client:
        mine = client.upsert(DOG, agent_id=AGENT, user_id="alice").memory
        general = client.upsert("Dogs may come to the beach office on Fridays.",
                                agent_id=AGENT).memory
        assert mine.user_id == "alice" and client.get(mine.id, agent_id=AGENT).user_id == "alice"
        assert [m.id for m in client.iter_memories(agent_id=AGENT, user_id="alice")] == [mine.id]
        every = {m.id for m in client.iter_memories(agent_id=AGENT)}
        assert every == {mine.id, general.id}  # listing by the agent shows every user's
        assert mine.id in ids(client.search(ASK, agent_id=AGENT, user_id="alice"))
        for other in ("bob", ""):
            seen = ids(client.search(ASK, agent_id=AGENT, user_id=other))
            assert general.id in seen and mine.id not in seen, other
        asked = client.inject(ASK, channel_id="alice-1", agent_id=AGENT, user_id="alice")
        assert "Giruruka" in asked.block
        for other, channel in (("bob", "bob-1"), ("", "nobody-1")):
            reply = client.inject(ASK, channel_id=channel, agent_id=AGENT, user_id=other)
            assert "Giruruka" not in reply.block and mine.id not in {i.id for i in reply.items}


def test_forget_user_erases_them_and_counts_it(running: Running) -> None:
    with Client(running.target) as client:
        kept = client.upsert("Bob's cat is called Miso.", agent_id=AGENT, user_id="bob").memory
        for text in (DOG, "I moved to Lisbon in May."):
            client.upsert(text, agent_id=AGENT, user_id="alice")
        client.inject(ASK, channel_id="alice-2", agent_id=AGENT, user_id="alice")
        erased = client.forget_user(AGENT, "alice")
        assert (erased.memories, erased.channels) == (2, 1) and erased.versions >= 2
        assert list(client.iter_memories(agent_id=AGENT, user_id="alice",
                                         include_forgotten=True)) == []
        assert client.forget_user(AGENT, "alice") == store_pb2.ForgetUserResponse()
        assert [m.id for m in client.iter_memories(agent_id=AGENT)] == [kept.id]


def test_a_hard_forget_leaves_no_forgotten_copy(running: Running) -> None:
    with Client(running.target) as client:
        soft = client.upsert("The staging printer sits on the third floor.",
                             agent_id=AGENT).memory
        hard = client.upsert("The lobby plant is a ficus watered on Mondays.",
                             agent_id=AGENT).memory
        client.forget(soft.id, agent_id=AGENT)
        client.forget(hard.id, agent_id=AGENT, hard=True)
        listed = [m.id for m in client.iter_memories(agent_id=AGENT, include_forgotten=True)]
        assert listed == [soft.id]
        with pytest.raises(NotFoundError):
            client.get(hard.id, agent_id=AGENT)


def test_records_carry_the_user_and_channel_privacy() -> None:
    line = {"content": DOG, "agent_id": AGENT, "user_id": "alice"}
    assert memory_from_dict(line).user_id == "alice"
    private = memory_from_dict({"content": "x", "agent_id": AGENT, "channel_id": "c1",
                                "channel_private": True})
    assert private.channel_private and not item_from_dict(line).restore
    exported = memory_to_dict(memory_from_dict(line))
    assert (exported["user_id"], exported["channel_private"]) == ("alice", False)
    again = memory_from_dict(memory_to_dict(private))
    assert (again.user_id, again.channel_private, again.channel_id) == ("", True, "c1")
    with pytest.raises(ValueError, match="channel_private must be true or false"):
        memory_from_dict({"content": "x", "channel_private": "yes"})
