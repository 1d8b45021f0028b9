"""Capture "user": each user turn Inject commits becomes one OBSERVATION memory of the agent,
through the vault's gates, exactly once; nothing else does."""

from __future__ import annotations

import pytest
from memsidecar.v1 import injection_pb2 as inj
from memsidecar.v1 import memory_pb2 as m
from memsidecar.v1 import store_pb2 as s

from sidecar.capture import CAPTURE_SOURCE
from sidecar.embedding import Embedder
from sidecar.injection.types import Abandoned, InjectRequest
from tests.capture.conftest import Serve
from tests.conftest import Running
from tests.waiting import wait_for

AGENT = "ops"
TURN = "The staging database moved to host db-7 in Frankfurt last Tuesday"


def inject(live: Running, text: str = TURN, channel: str = "c1", turn: int = 0,
           **fields: object) -> inj.InjectResponse:
    return live.injection.Inject(inj.InjectRequest(
        agent_id=AGENT, channel_id=channel, text=text, turn=turn, **fields))  # type: ignore[arg-type]


def captured(live: Running) -> list[m.Memory]:
    """The agent's captured memories once every pending capture is written."""
    live.server.app.injector.capture.drain.flush()  # type: ignore[union-attr]
    reply = live.store.ListMemories(s.ListMemoriesRequest(agent_id=AGENT, page_size=1000))
    return [x for x in reply.memories if x.source == CAPTURE_SOURCE]


def rows(live: Running) -> list[tuple[object, ...]]:
    return list(live.server.app.db.execute(
        "SELECT channel_id, turn, role, content, outcome FROM captures"))


def test_a_user_turn_becomes_one_observation_of_the_agent(serve: Serve) -> None:
    live = serve(capture="user")
    reply = inject(live)
    [memory] = captured(live)
    assert memory.content == TURN and memory.type == m.MEMORY_TYPE_OBSERVATION
    assert memory.agent_id == AGENT and memory.channel_id == "c1"
    assert memory.tier == m.TIER_CANON
    [(at_us,)] = live.server.app.db.execute("SELECT at_us FROM captures")
    assert memory.created_at.ToMicroseconds() == at_us  # timestamped at the turn's commit
    assert [r[:3] for r in rows(live)] == [("c1", reply.turn, "user")]
    assert rows(live)[0][3] == ""  # the row's copy of the text is erased once written


def test_a_retried_turn_captures_nothing_twice(serve: Serve) -> None:
    live = serve(capture="user")
    first = inject(live, turn=1)
    assert inject(live, turn=1).block == first.block  # the retry
    assert len(captured(live)) == 1
    inject(live, "Deploys happen on Thursdays now, not on Tuesdays", turn=2)
    assert len(captured(live)) == 2


def test_an_abandoned_inject_captures_nothing(serve: Serve) -> None:
    """An expired or cancelled call ends before its commit point: no turn, no capture."""
    live = serve(capture="user")
    request = InjectRequest(agent_id=AGENT, channel_id="c1", text=TURN)
    with pytest.raises(Abandoned):
        live.server.app.injector.inject(request, alive=lambda: False)
    assert captured(live) == [] and rows(live) == []
    assert live.server.app.injector.inject(request).turn == 1
    assert len(captured(live)) == 1


def test_a_system_retrigger_is_never_captured(serve: Serve) -> None:
    live = serve(capture="all")
    assert inject(live, source="system").skip_reason == "system_source"
    assert captured(live) == [] and rows(live) == []


def test_a_coalesced_batch_is_one_memory(serve: Serve) -> None:
    live = serve(capture="user")
    live.injection.Inject(inj.InjectRequest(agent_id=AGENT, channel_id="c1", texts=[
        "I moved to Lisbon in March", "and I started a job at the harbour office"]))
    [memory] = captured(live)
    assert memory.content == "I moved to Lisbon in March\nand I started a job at the harbour office"


def test_a_card_number_is_not_stored_anywhere(serve: Serve) -> None:
    live = serve(capture="user")
    card = "4111 1111 1111 1111"
    reply = inject(live, f"my card is {card}, expiry 04/29, please book the flight")
    assert reply.turn == 1  # the Inject itself succeeds
    assert captured(live) == [] and rows(live) == []
    assert live.server.app.injector.capture.refused["PII_DETECTED"] == 1  # type: ignore[union-attr]
    dump = "\n".join(str(r) for t in ("memories", "memory_versions", "captures")
                     for r in live.server.app.db.execute(f"SELECT * FROM {t}"))
    assert "1111" not in dump


def test_capture_off_writes_nothing(serve: Serve) -> None:
    live = serve()  # the default
    for turn in range(1, 4):
        inject(live, f"{TURN} ({turn})", turn=turn)
    live.injection.PruneHistory(inj.PruneHistoryRequest(agent_id=AGENT, channel_id="c1", messages=[
        inj.Message(role=inj.ROLE_ASSISTANT, content="Noted, db-7 it is.")]))
    assert captured(live) == [] and rows(live) == []
    assert live.store.ListMemories(s.ListMemoriesRequest(agent_id=AGENT)).memories == []


def test_a_duplicate_turn_resolves_to_the_memory_it_repeats(serve: Serve) -> None:
    """The near-duplicate gate decides as for any write: the same text of the same user in
    another turn (or another channel) is not stored twice. Without a user, each channel's
    turn is that channel's own memory."""
    live = serve(capture="user")
    inject(live, turn=1, user_id="u1")
    inject(live, channel="c2", turn=1, user_id="u1")
    assert len(captured(live)) == 1
    assert sorted(str(r[4]) for r in rows(live)) == ["deduplicated", "stored"]
    inject(live, channel="c3", turn=1)
    inject(live, channel="c4", turn=1)
    assert sorted((x.channel_id, x.channel_private) for x in captured(live)
                  if not x.user_id) == [("c3", True), ("c4", True)]


def test_a_capture_left_pending_is_written_at_the_next_start(serve: Serve) -> None:
    """The drain stopped (as a crash would leave it): the turn's record waits in the store,
    and the next start writes it."""
    live = serve(capture="user")
    capture = live.server.app.injector.capture
    assert capture is not None
    capture.drain.close()
    inject(live)
    assert [str(r[4]) for r in rows(live)] == [""]  # pending, with the turn
    live.close()
    live = serve(capture="user")
    wait_for(lambda: len(live.store.ListMemories(s.ListMemoriesRequest(  # no flush: the start
        agent_id=AGENT, source=CAPTURE_SOURCE)).memories) == 1)          # drains it
    assert [x.content for x in captured(live)] == [TURN]


@pytest.mark.parametrize("index", ["turn", "pair"])
def test_a_turn_is_indexed_alone_or_with_the_message_before_it(
        serve: Serve, embedder: Embedder, index: str) -> None:
    """The block shows the turn; its vector is the turn's own (Inject's query embedding,
    the default) or, with the "pair" index, the turn followed by what it answers."""
    live = serve(capture="user")
    capture = live.server.app.injector.capture
    assert capture is not None
    capture.drain.index = index
    inject(live, "Where did we have that great ramen?", turn=1)
    live.injection.PruneHistory(inj.PruneHistoryRequest(agent_id=AGENT, channel_id="c1", messages=[
        inj.Message(role=inj.ROLE_USER, content="Where did we have that great ramen?"),
        inj.Message(role=inj.ROLE_ASSISTANT, content="Was it at Ichiran, near the station?")]))
    inject(live, "Yes, last Tuesday!", turn=2)
    found = {x.content: x.id for x in captured(live)}
    vector = live.server.app.memories.memories.embedding(found["Yes, last Tuesday!"])
    pair = embedder.embed(["Yes, last Tuesday!\nWas it at Ichiran, near the station?"])[0]
    alone = embedder.embed_query("Yes, last Tuesday!")
    assert vector is not None
    expected, other = (alone, pair) if index == "turn" else (pair, alone)
    assert float(vector @ expected) > 0.999 and float(vector @ other) < 0.99


def test_a_full_backlog_refuses_the_capture_and_the_turn_still_goes_out(serve: Serve) -> None:
    live = serve(capture="user")
    capture = live.server.app.injector.capture
    assert capture is not None
    capture.drain.close()  # its thread stops: what is recorded stays pending
    capture.drain.max_pending = 1
    inject(live, turn=1)
    second = inject(live, "Deploys happen on Thursdays now, not on Tuesdays", turn=2)
    assert second.turn == 2 and capture.outcomes()["QUEUE_FULL"] == 1
    assert sorted(r[1] for r in rows(live)) == [1]  # only the first turn was recorded
    assert capture.drain.flush() == 1 and not capture.drain.full()
    inject(live, "The VPN certificate is renewed in March", turn=3)
    assert sorted(r[1] for r in rows(live)) == [1, 3]
