"""One agent, many end users: a memory with a ``user_id`` is offered only to that user's
Search and Inject calls, never in a channel where several users have spoken; a turn without
``user_id`` is captured as private to its channel."""

from __future__ import annotations

from pathlib import Path

import apsw
import grpc
import pytest
from memsidecar.v1 import injection_pb2 as inj
from memsidecar.v1 import memory_pb2 as m
from memsidecar.v1 import store_pb2 as s

from sidecar.store.db import Database
from sidecar.store.migrations import MIGRATIONS
from tests.capture.conftest import Serve
from tests.conftest import Running

AGENT = "support"
ALICE_DOG = "My dog is called Giruruka and he loves running on the beach"
BOB_DOG = "My dog is called Rexford and he hides under the bed during thunder"
ASK_DOG = "What is the name of my dog?"


def inject(live: Running, text: str, channel: str, user: str = "") -> inj.InjectResponse:
    return live.injection.Inject(inj.InjectRequest(agent_id=AGENT, channel_id=channel,
                                                   text=text, user_id=user))


def written(live: Running) -> None:
    live.server.app.injector.capture.drain.flush()  # type: ignore[union-attr]


def told(serve: Serve, said: list[tuple[str, str, str]]) -> Running:
    """A server after each (text, channel, user) was said with capture on, then started
    again with it off: the questions that follow are not captured, so what they are offered
    depends on who asks, not on their own earlier questions."""
    live = serve(capture="user")
    for text, channel, user in said:
        inject(live, text, channel, user)
    written(live)
    live.close()
    return serve(capture="off")


def block_of(live: Running, text: str, channel: str, user: str = "") -> str:
    return inject(live, text, channel, user).block


def search(live: Running, query: str, user: str = "") -> list[str]:
    reply = live.store.Search(s.SearchRequest(query=query, agent_id=AGENT, user_id=user,
                                              limit=20))
    return [hit.memory.content for hit in reply.hits]


def test_two_users_of_one_agent_never_see_each_other(serve: Serve) -> None:
    live = told(serve, [(ALICE_DOG, "alice-1", "alice"), (BOB_DOG, "bob-1", "bob")])
    alice = block_of(live, ASK_DOG, "alice-2", "alice")
    bob = block_of(live, ASK_DOG, "bob-2", "bob")
    assert "Giruruka" in alice and "Rexford" not in alice  # her own, across her channels
    assert "Rexford" in bob and "Giruruka" not in bob
    assert ALICE_DOG in search(live, ASK_DOG, "alice")
    assert BOB_DOG not in search(live, ASK_DOG, "alice")
    assert not {ALICE_DOG, BOB_DOG} & set(search(live, ASK_DOG))  # no user: no user's memory
    stranger = block_of(live, ASK_DOG, "carol-1", "carol")
    assert "Giruruka" not in stranger and "Rexford" not in stranger


def test_captures_carry_their_user_and_listing_shows_every_user(serve: Serve) -> None:
    live = serve(capture="user")
    inject(live, ALICE_DOG, "alice-1", "alice")
    inject(live, BOB_DOG, "bob-1", "bob")
    written(live)
    listed = live.store.ListMemories(s.ListMemoriesRequest(agent_id=AGENT)).memories
    assert sorted((x.user_id, x.channel_private) for x in listed) == [
        ("alice", False), ("bob", False)]
    only = live.store.ListMemories(s.ListMemoriesRequest(agent_id=AGENT, user_id="bob"))
    assert [x.content for x in only.memories] == [BOB_DOG]


def test_a_channel_two_users_spoke_in_gets_no_private_memory(serve: Serve) -> None:
    live = told(serve, [(ALICE_DOG, "alice-1", "alice")])
    assert "Giruruka" in block_of(live, ASK_DOG, "alice-2", "alice")
    inject(live, "Hello everyone, which channel is this?", "lobby", "alice")
    inject(live, "Hi all, I just joined the lobby", "lobby", "bob")
    # alice's next turn there: the channel is read by both of them now
    assert "Giruruka" not in block_of(live, ASK_DOG, "lobby", "alice")
    assert "Giruruka" not in block_of(live, ASK_DOG, "lobby", "bob")
    live.close()
    again = serve(capture="off")  # the speakers are kept with the channel's state
    assert "Giruruka" not in block_of(again, ASK_DOG, "lobby", "alice")
    assert "Giruruka" in block_of(again, ASK_DOG, "alice-3", "alice")


def test_a_turn_without_a_user_stays_in_its_channel(serve: Serve) -> None:
    live = serve(capture="user", history_pruned=False, context_window_depth=1)
    said = "My cat is named Pixeldust and she sleeps on the warm laptop all day"
    inject(live, said, "anon-1")
    written(live)
    [memory] = [x for x in live.store.ListMemories(s.ListMemoriesRequest(
        agent_id=AGENT)).memories]
    assert memory.channel_private and memory.channel_id == "anon-1" and not memory.user_id
    ask = "What is the name of my cat?"
    assert "Pixeldust" not in block_of(live, ask, "anon-2")  # another channel
    assert "Pixeldust" not in block_of(live, ask, "anon-3", "alice")  # a user elsewhere
    inject(live, "Some unrelated chatter about the weather today", "anon-1")
    assert "Pixeldust" in block_of(live, ask, "anon-1")  # out of view, recalled there
    assert said not in search(live, ask) and said not in search(live, ask, "alice")


def test_a_written_user_memory_is_private_and_keeps_its_user(running: Running) -> None:
    memory = m.Memory(content="Prefers invoices in Portuguese and paper copies by post",
                      type=m.MEMORY_TYPE_PREFERENCE, agent_id=AGENT, user_id="dora")
    stored = running.store.UpsertMemory(s.UpsertMemoryRequest(memory=memory)).memory
    assert stored.user_id == "dora"
    hits = running.store.Search(s.SearchRequest(query="invoice language", agent_id=AGENT,
                                                user_id="dora")).hits
    assert [h.memory.id for h in hits] == [stored.id]
    assert not running.store.Search(s.SearchRequest(query="invoice language",
                                                    agent_id=AGENT, user_id="eve")).hits
    moved = m.Memory(id=stored.id, content=stored.content, type=stored.type, agent_id=AGENT,
                     user_id="eve")
    with pytest.raises(grpc.RpcError) as err:
        running.store.UpsertMemory(s.UpsertMemoryRequest(memory=moved))
    assert err.value.code() == grpc.StatusCode.PERMISSION_DENIED
    assert "another user" in (err.value.details() or "")


def test_captures_stored_before_users_become_private_to_their_channel(
        tmp_path: Path) -> None:
    path = tmp_path / "old.sqlite3"
    old = apsw.Connection(str(path))
    for step in MIGRATIONS[:9]:
        old.execute(step)
    old.execute("PRAGMA user_version=9")
    for i, (source, channel) in enumerate((("capture", "c1"), ("notes", "c1"), ("capture", ""))):
        old.execute("INSERT INTO memories (id, content, type, importance, created_at, "
                    "updated_at, source, channel_id, agent_id, embedding) VALUES "
                    "(?, 'x', 8, 0.3, 1, 1, ?, ?, 'a', x'00')", (f"m{i}", source, channel))
    old.close()
    db = Database(path)
    got = db.execute("SELECT id, channel_private, user_id FROM memories ORDER BY id")
    db.close()
    assert [tuple(r) for r in got] == [("m0", 1, ""), ("m1", 0, ""), ("m2", 0, "")]


def test_a_bad_user_id_is_refused_and_changes_nothing(running: Running) -> None:
    for bad, code in (("ana\nbob", grpc.StatusCode.INVALID_ARGUMENT),
                      ("x" * 300, grpc.StatusCode.INVALID_ARGUMENT),
                      ("4111 1111 1111 1111", grpc.StatusCode.FAILED_PRECONDITION)):
        with pytest.raises(grpc.RpcError) as err:
            running.injection.Inject(inj.InjectRequest(agent_id=AGENT, channel_id="c1",
                                                       text="hello there", user_id=bad))
        assert err.value.code() == code and "user_id" in (err.value.details() or "")
        if code == grpc.StatusCode.FAILED_PRECONDITION:  # personal data: never echoed
            assert bad not in (err.value.details() or "")
        with pytest.raises(grpc.RpcError):
            running.store.Search(s.SearchRequest(query="hello", user_id=bad))
    with pytest.raises(grpc.RpcError) as err:
        running.store.UpsertMemory(s.UpsertMemoryRequest(memory=m.Memory(
            content="x", type=m.MEMORY_TYPE_FACT, agent_id=AGENT, user_id="ana",
            channel_id="c1", channel_private=True)))
    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert running.injection.GetInjectionTrace(inj.GetInjectionTraceRequest(
        agent_id=AGENT, channel_id="c1")).turns == []
    assert not running.store.ListMemories(s.ListMemoriesRequest(all_agents=True)).memories
