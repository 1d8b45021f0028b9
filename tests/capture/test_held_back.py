"""A captured turn is not injected into its own channel while the agent still has it in view
(its text in the history sent to PruneHistory, or for an agent that does not prune,
context_window_depth turns); in the agent's other channels it is recallable at once."""

from __future__ import annotations

from memsidecar.v1 import injection_pb2 as inj
from memsidecar.v1 import memory_pb2 as m
from memsidecar.v1 import store_pb2 as s

from tests.capture.conftest import Serve
from tests.capture.test_capture import AGENT, captured, inject
from tests.conftest import Running

USER = "ana-brother"  # the captures are his, recalled in each of his channels
SAID = "My sister Ana lives in Porto and works as a night nurse at the city hospital"
ASKED = ("Where does my sister Ana live and work?", "Which city is Ana in, and what is her job?",
         "Remind me what Ana does for a living and where", "Ana's city and job again?")
OTHER = ("The staging database runs on host db-7", "Deploys happen on Thursdays",
         "The cat's name is Miso", "Standup is at 9:30 every weekday")


def start(serve: Serve, **fields: object) -> tuple[Running, str]:
    live = serve(capture="user", **fields)
    for text in OTHER:  # a background for the relevance floors
        live.store.UpsertMemory(s.UpsertMemoryRequest(memory=m.Memory(
            content=text, type=m.MEMORY_TYPE_FACT, agent_id=AGENT)))
    inject(live, SAID, channel="c1", turn=1, user_id=USER)
    [memory] = captured(live)
    return live, memory.id


def prune(live: Running, *texts: str) -> None:
    messages = [inj.Message(role=inj.ROLE_USER if n % 2 == 0 else inj.ROLE_ASSISTANT,
                            content=text) for n, text in enumerate(texts)]
    live.injection.PruneHistory(inj.PruneHistoryRequest(agent_id=AGENT, channel_id="c1",
                                                        messages=messages))


def ids(reply: inj.InjectResponse) -> list[str]:
    return [item.id for item in reply.items]


def test_held_in_its_channel_while_in_the_history_then_recalled(serve: Serve) -> None:
    live, captured_id = start(serve)
    # at once in another channel of his
    assert captured_id in ids(inject(live, ASKED[0], channel="c2", turn=1, user_id=USER))
    prune(live, SAID, "How lovely, Porto is a beautiful city.")
    assert captured_id not in ids(inject(live, ASKED[1], channel="c1", turn=2, user_id=USER))
    prune(live, SAID, "How lovely, Porto is a beautiful city.", ASKED[1], "She is in Porto.")
    assert captured_id not in ids(inject(live, ASKED[2], channel="c1", turn=3, user_id=USER))
    # The agent's compactor replaced the early turns with its own summary.
    prune(live, "(summary) We talked about family.", ASKED[2], "She is a nurse.")
    assert captured_id in ids(inject(live, ASKED[3], channel="c1", turn=4, user_id=USER))


def test_an_agent_that_does_not_prune_sees_it_for_the_window_depth(serve: Serve) -> None:
    live, captured_id = start(serve, history_pruned=False, context_window_depth=2)
    assert captured_id not in ids(inject(live, ASKED[0], channel="c1", turn=2, user_id=USER))
    assert captured_id not in ids(inject(live, ASKED[1], channel="c1", turn=3, user_id=USER))
    assert captured_id in ids(inject(live, ASKED[2], channel="c1", turn=4, user_id=USER))


def test_a_reset_channel_no_longer_holds_it(serve: Serve) -> None:
    live, captured_id = start(serve)
    assert captured_id not in ids(inject(live, ASKED[0], channel="c1", turn=2, user_id=USER))
    live.injection.ResetChannel(inj.ResetChannelRequest(agent_id=AGENT, channel_id="c1"))
    assert captured_id in ids(inject(live, ASKED[1], channel="c1", turn=1, user_id=USER))


def test_a_turn_resolved_to_another_memory_holds_that_memory(serve: Serve) -> None:
    """The near-duplicate gate resolves a turn to a memory said elsewhere: that memory is held
    back in the turn's channel while the turn's own text is in its history."""
    live = serve(capture="user")
    for text in OTHER:
        live.store.UpsertMemory(s.UpsertMemoryRequest(memory=m.Memory(
            content=text, type=m.MEMORY_TYPE_FACT, agent_id=AGENT)))
    inject(live, SAID + ".", channel="c2", turn=1, user_id=USER)
    inject(live, SAID, channel="c1", turn=1, user_id=USER)
    [memory] = captured(live)  # one memory: the second turn resolved to the first
    assert memory.content == SAID + "."
    inject(live, "The weather is lovely today", channel="c1", turn=2, user_id=USER)
    prune(live, SAID, "How lovely, Porto is a beautiful city.", "The weather is lovely today",
          "Enjoy the sun!")
    assert memory.id not in ids(inject(live, ASKED[0], channel="c1", turn=3, user_id=USER))
    assert memory.id in ids(inject(live, ASKED[1], channel="c3", turn=1, user_id=USER))


def test_a_memory_a_capture_repeats_is_held_before_and_after_it_is_written(
        serve: Serve) -> None:
    """The assistant repeats a stored memory word for word: while that reply is in the
    history the memory is held back in the channel, whether the capture is still pending (the
    next Inject comes at once) or was resolved to that memory by the near-duplicate gate."""
    live = serve(capture="all")
    for text in OTHER:
        live.store.UpsertMemory(s.UpsertMemoryRequest(memory=m.Memory(
            content=text, type=m.MEMORY_TYPE_FACT, agent_id=AGENT)))
    fact = "The Thai place on Fifth Street closes at ten on weekdays"
    stored = live.store.UpsertMemory(s.UpsertMemoryRequest(memory=m.Memory(
        content=fact, type=m.MEMORY_TYPE_FACT, agent_id=AGENT))).memory.id
    inject(live, "Where should we eat tonight?", channel="c1", turn=1, user_id=USER)
    capture = live.server.app.injector.capture
    assert capture is not None
    capture.drain.close()  # what the next history captures stays pending
    prune(live, "Where should we eat tonight?", fact)
    asked = "When does the Thai place on Fifth Street close?"
    assert stored not in ids(inject(live, asked, channel="c1", turn=2, user_id=USER))
    assert stored in ids(inject(live, asked, channel="c2", turn=1, user_id=USER))
    capture.drain.flush()  # the reply resolves to the stored memory
    assert [str(r[4]) for r in live.server.app.db.execute(
        "SELECT channel_id, turn, role, content, outcome FROM captures WHERE role = "
        "'assistant'")] == ["deduplicated"]
    assert capture.repo.held_among("c1", 0, [stored]) == ({stored}, [])  # held as the reply
    assert capture.repo.held_among("c2", 0, [stored])[0] == set()
    again = "So when does the Thai place on Fifth Street close?"
    assert stored not in ids(inject(live, again, channel="c1", turn=3, user_id=USER))
