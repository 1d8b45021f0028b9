"""Conversation focus: follow-ups are offered the memories written next to what the
conversation drew on (real server, model and SQLite file)."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future

import numpy as np
import pytest
from memsidecar.v1 import injection_pb2 as inj

from sidecar.conversation.focus import (
    DECAY,
    HIT_VOTE,
    LOW_GATE,
    LOW_SHARE,
    REPLY_SHARE,
    REPLY_TERMS,
    REPLY_VOTE,
    WIDE,
    Around,
    Votes,
    around,
    reply_vote,
    tally,
)
from sidecar.conversation.query_context import RecentTurn, spoken
from sidecar.conversation.room import MAX_WAITING, Conversation
from sidecar.injection.config import MemoryInjectionConfig
from sidecar.records import Viewer
from tests import naive
from tests.conftest import Running
from tests.injection.conftest import Serve
from tests.injection.helpers import inject, put
from tests.injection.test_query_context import FACTS, configure, converse

COHESION = MemoryInjectionConfig().query_context_focus_cohesion
# Two notes of one writer (source "notes"), written one after the other, between team
# facts of another writer (source "team").
JONAS = [
    "Jonas runs the bakery on Harbour Road.",
    "Last winter the oven at Harbour Road broke down.",
    "Jonas paid for the repair with a bank loan.",
    "His bakery sells rye bread and pretzels.",
    "His daughter delivers bread to the hotel by van.",
]
MARIA = [
    "Maria opened a small bakery on Elm Street in 2019.",
    "She bakes sourdough bread every morning at four.",
    "Her brother Tomas delivers the bread to three cafes by bicycle.",
    "In the cold months her oven failed and the shop shut for two weeks.",
    "A neighbour lent her the money for a new one.",
    "Since then she sells cinnamon buns on Saturdays.",
]
TALK = [("Who opened the bakery on Elm Street?", "Maria, in 2019."),
        ("When does she bake?", "Every morning at four."),
        ("What broke last winter?", "Her oven failed; the shop shut for two weeks."),
        ("Who paid for the new one?", "A neighbour lent her the money.")]
# Follow-ups of at most two terms of their own, after TALK.
TERSE = [("And after that?", "Since then she sells cinnamon buns on Saturdays."),
         ("Who delivers?", "Her brother Tomas, by bicycle.")]
MIN_SCORE = 0.25  # contextual_min_score's default


def stored(live: Running) -> dict[str, str]:
    """Memory id -> "J<i>", "M<i>" (the notes) or "team"."""
    names = {put(live, f, source="team").id: "team" for f in FACTS[:9]}
    names |= {put(live, t, source="notes").id: f"J{i}" for i, t in enumerate(JONAS)}
    names |= {put(live, t, source="notes").id: f"M{i}" for i, t in enumerate(MARIA)}
    names |= {put(live, f, source="team").id: "team" for f in FACTS[9:]}
    return names


def in_view(live: Running, channel: str, replies: list[inj.InjectResponse],
            keep: int = 3) -> list[set[str]]:
    """Per turn, the memories in front of the model: its block's and the ``keep - 1``
    non-empty blocks before it."""
    blocks = [[i.id for i in r.items] for r in replies]
    out = []
    for n in range(len(blocks)):
        earlier = [b for b in blocks[:n] if b][-(keep - 1):]
        out.append(set(blocks[n]).union(*earlier))
    return out


def trace(live: Running, channel: str) -> list[inj.TraceTurn]:
    return list(live.injection.GetInjectionTrace(
        inj.GetInjectionTraceRequest(channel_id=channel)).turns)


def test_a_follow_up_gets_what_was_written_next_to_the_conversations_memories(
        serve: Serve) -> None:
    live = serve()
    names = stored(live)
    focused = converse(live, "on", TALK[:3])
    configure(live, query_context_focus=0)
    plain = converse(live, "off", TALK[:3])
    # "What broke last winter?": the search alone finds the other bakery's oven; with the
    # focus (Maria's notes, which the first turns used) hers is in view too.
    assert "M3" in {names[i] for i in in_view(live, "on", focused)[2]}
    assert "M3" not in {names[i] for i in in_view(live, "off", plain)[2]}
    turns = trace(live, "on")
    assert "M3" in {names[m] for t in turns[1:3] for m in t.focus_offered}
    for turn, reply in zip(turns[1:], focused[1:], strict=True):
        assert turn.context_gate > 0
        assert {names[a] for a in turn.focus_anchors} <= {f"M{i}" for i in range(len(MARIA))}
        offered = list(turn.focus_offered)
        traced = [i.id for i in turn.injected] + [d.id for d in turn.dropped]
        assert offered and all(traced.count(m) == 1 for m in offered)  # each in one place
        assert [i.id for i in reply.items] == [i.id for i in turn.injected]
    assert not any(t.focus_anchors or t.focus_offered for t in trace(live, "off"))


def test_only_memories_of_the_same_writer_and_above_the_floor_are_offered(
        serve: Serve) -> None:
    live = serve(query_context_focus=3)
    names = stored(live)
    converse(live, "c", [*TALK, *TERSE])
    turns = trace(live, "c")
    offered = [names[m] for t in turns for m in t.focus_offered]
    assert offered and "team" not in offered  # the team facts written next to M5: not its
    retriever = live.server.app.injector.retriever
    for t in turns:
        items = {i.id: i for i in t.injected}
        for m in (m for m in t.focus_offered if m in items and items[m].cosine < MIN_SCORE):
            # under the floor: a terse turn's memory reading like another anchor
            assert t.context_gate >= LOW_GATE and items[m].cosine >= LOW_SHARE * MIN_SCORE
            assert max(float(retriever.embedding_of(m) @ retriever.embedding_of(a))
                       for a in t.focus_anchors if a != m) >= COHESION


def test_a_terse_follow_up_also_gets_a_weaker_match_reading_like_the_conversations_notes(
        serve: Serve) -> None:
    live = serve()
    names = stored(live)
    converse(live, "c", [*TALK, *TERSE])
    last = trace(live, "c")[-1]  # "Who delivers?": Maria's brother does
    assert last.context_gate == 1.0
    tomas = next(m for m in last.focus_offered if names[m] == "M2")
    assert next(i for i in last.injected if i.id == tomas).cosine < MIN_SCORE


def interleaved(live: Running) -> dict[str, str]:
    """Memory id -> "M<i>" or "other": one writer's notes, Maria's two places apart among
    unrelated ones."""
    names: dict[str, str] = {}
    for i, note in enumerate(MARIA):
        for fact in FACTS[2 * i:2 * i + 2]:
            names[put(live, fact, source="notes").id] = "other"
        names[put(live, note, source="notes").id] = f"M{i}"
    return names


def test_a_store_written_in_an_order_of_its_own_finds_the_whole_by_what_reads_alike(
        serve: Serve) -> None:
    # with a radius of 1 Maria's notes are not written next to each other: the notes
    # next to them read like none of hers, the search for hers finds them
    live = serve(query_context_focus_radius=1)
    names = interleaved(live)
    focused = converse(live, "c", TALK[:3])
    assert "M3" in {names[i] for i in in_view(live, "c", focused)[2]}
    offered = [names[m] for t in trace(live, "c") for m in t.focus_offered]
    assert offered and "other" not in offered


@pytest.mark.parametrize(("write", "radius", "joins"),
                         [(stored, 12, False), (interleaved, 1, True)])
def test_the_search_stands_in_only_where_the_writers_order_says_little(
        serve: Serve, write: Callable[[Running], dict[str, str]], radius: int,
        joins: bool) -> None:
    live = serve()
    names = write(live)
    anchor = next(m for m, name in names.items() if name == "M0")
    retriever = live.server.app.injector.retriever
    voted = [RecentTurn(1, "Who opened the bakery on Elm Street?", np.zeros(0, np.float32),
                        votes=((anchor, HIT_VOTE),))]
    viewer = Viewer()
    taken = around(voted, 2, retriever, viewer, radius, COHESION)
    near = {m.id for m in retriever.neighbourhood([anchor], radius, viewer)}
    assert taken.anchors == (anchor,) and near <= set(taken.ids)
    assert (set(taken.ids) > near) == joins
    # her notes are taken around her first one whether written next to it or not
    assert {f"M{i}" for i in range(len(MARIA))} <= {names[m] for m in taken.ids}


def test_a_question_that_stands_alone_is_not_focused(serve: Serve) -> None:
    live = serve()
    stored(live)
    talk = [*TALK[:2], ("Which database stores the billing service's invoices?", "")]
    after = converse(live, "after", talk)[-1]
    configure(live, query_context_focus=0)
    alone = converse(live, "alone", talk)[-1]
    last = trace(live, "after")[-1]
    assert last.context_gate == 0 and not last.focus_anchors and not last.focus_offered
    assert [i.id for i in after.items] == [i.id for i in alone.items]


def test_the_votes_come_back_after_a_restart(serve: Serve) -> None:
    live = serve()
    names = stored(live)
    converse(live, "kept", TALK[:2])
    before = recorded_votes(live, "kept")
    # turn 1: its hits and its reply (shown by turn 2's PruneHistory); turn 2: its hits
    assert [(t, bool(v), bool(r)) for t, v, r in before] == [(1, True, True), (2, True, False)]
    live.close()
    live = serve()
    assert recorded_votes(live, "kept") == before
    third = converse(live, "kept", TALK[2:3])[-1]
    turn = trace(live, "kept")[-1]
    assert {names[a] for a in turn.focus_anchors} <= {f"M{i}" for i in range(len(MARIA))}
    assert turn.focus_anchors and turn.focus_offered
    assert set(turn.focus_offered) & {i.id for i in third.items}
    # a reset forgets them with the rest of the channel
    live.injection.ResetChannel(inj.ResetChannelRequest(channel_id="kept"))
    inject(live, TALK[2][0], channel="kept")
    assert not trace(live, "kept")[-1].focus_anchors


def recorded_votes(live: Running, channel: str) -> list[tuple[int, Votes, Votes]]:
    """(turn, its hits' votes, its reply's votes) of the channel's recent turns."""
    state = live.server.app.injector.states.get(channel)
    return [(r.turn, r.votes, r.reply_votes) for r in state.recent]


def test_votes_fade_by_turn_and_the_reply_counts_from_the_turn_after_it() -> None:
    row = np.zeros(4, np.float32)
    recent = [RecentTurn(1, "a", row, "r", (("x", HIT_VOTE),), (("y", REPLY_VOTE),)),
              RecentTurn(2, "b", row, "", (("x", HIT_VOTE / 2), ("z", HIT_VOTE)))]
    votes = tally(recent, 3)
    assert votes == {
        "x": HIT_VOTE * DECAY ** 2 + HIT_VOTE / 2 * DECAY,
        "y": REPLY_VOTE * DECAY,
        "z": HIT_VOTE * DECAY,
    }
    assert tally(recent, 2).keys() == {"x", "y"}  # a turn's own votes count from the next


def test_a_reply_votes_for_the_memory_in_view_it_holds_words_of(serve: Serve) -> None:
    live = serve()
    names = stored(live)
    ids = {n: i for i, n in names.items() if n != "team"}
    retriever = live.server.app.injector.retriever
    asked, reply = "When does she bake?", "Every morning at four."
    assert reply_vote(retriever, Viewer(), asked, [ids["M0"], ids["M1"], ids["J1"]], reply) == (
        (ids["M1"], REPLY_VOTE),)
    # a reply holding none of their words: no vote, however well the question matches
    assert reply_vote(retriever, Viewer(), asked, [ids["M0"], ids["M1"]], "Yes.") == ()


def test_a_reply_drawing_on_a_memory_out_of_view_votes_for_the_stores_best(
        serve: Serve) -> None:
    live = serve()
    names = stored(live)
    ids = {n: i for i, n in names.items() if n != "team"}
    retriever = live.server.app.injector.retriever
    asked, reply = "When does she bake?", "Every morning at four."
    # none in view holds "morning" or "four": the store's memory that does
    assert reply_vote(retriever, Viewer(), asked, [ids["M0"], ids["J1"]], reply) == (
        (ids["M1"], REPLY_VOTE),)
    assert reply_vote(retriever, Viewer(), asked, [], reply) == ((ids["M1"], REPLY_VOTE),)
    assert reply_vote(retriever, Viewer(), asked, [], "Yes.") == ()
    # another agent's own memory is not this agent's to vote for
    secret = put(live, "Every morning at four the night guard locks the cellar.",
                 agent_id="other").id
    assert reply_vote(retriever, Viewer("other"), "When is the cellar locked?", [], reply) == (
        (secret, REPLY_VOTE),)
    assert reply_vote(retriever, Viewer("a"), "When is the cellar locked?", [], reply) == (
        (ids["M1"], REPLY_VOTE),)
    assert reply_vote(retriever, Viewer("a"), "When is the cellar locked?", [secret], reply) == (
        (ids["M1"], REPLY_VOTE),)  # in view of the channel, but not this agent's to see


def test_a_reply_vote_is_the_one_analysing_every_text_would_give(serve: Serve) -> None:
    live = serve()
    names = stored(live)
    ids = {n: i for i, n in names.items() if n != "team"}
    other = put(live, "Every morning at four the night guard locks the cellar.",
                agent_id="other").id
    retriever = live.server.app.injector.retriever
    replies = [r for _, r in TALK + TERSE] + [
        "Yes.", "Jonas paid with a bank loan.", "The oven at Harbour Road broke.", "bread",
        "She sells bread; her brother delivers it to the hotel and three cafes.", "four"]
    views = [[], [ids["M0"], ids["M1"]], [ids["J1"], ids["J2"], ids["M3"]], [other, ids["M5"]],
             list(ids.values())]
    votes = 0
    for asked, _ in TALK + TERSE:
        for reply in replies:
            for view in views:
                for viewer in (Viewer(), Viewer("other")):
                    got = reply_vote(retriever, viewer, asked, view, reply)
                    assert got == naive.reply_vote(retriever, viewer, asked, view, reply, WIDE,
                                                   REPLY_TERMS, REPLY_SHARE, REPLY_VOTE), (
                        asked, reply, view, viewer)
                    votes += bool(got)
    assert votes > 100  # most replies vote


def test_the_focus_worked_out_ahead_is_the_one_worked_out_in_place(serve: Serve) -> None:
    live = serve()
    names = stored(live)
    ids = {n: i for i, n in names.items() if n != "team"}
    retriever = live.server.app.injector.retriever
    config = MemoryInjectionConfig()
    empty = np.zeros(retriever.embed_query("x").shape, np.float32)
    recent = [RecentTurn(1, "Who opened the bakery on Elm Street?", empty,
                         votes=((ids["M0"], HIT_VOTE), (ids["J0"], HIT_VOTE / 2)),
                         reply_votes=((ids["M0"], REPLY_VOTE),)),
              RecentTurn(2, "When does she bake?", empty, votes=((ids["M1"], HIT_VOTE),))]
    conversation = Conversation(retriever)
    for viewer in (Viewer(), Viewer("other")):
        waiting = conversation.around(config, recent, 3, viewer)
        assert not waiting.done()  # until the next Inject starts it
        assert not conversation.quiet("And why?")
        ahead = waiting.result(timeout=30)
        here = around(spoken(recent, 3, viewer.user_id), 3, retriever, viewer,
                      config.query_context_focus_radius, config.query_context_focus_cohesion)
        assert ahead.anchors == here.anchors and ahead.anchors
        assert ahead.ids == here.ids
        np.testing.assert_array_equal(ahead.labels, here.labels)
        np.testing.assert_array_equal(ahead.cohesion, here.cohesion)
        np.testing.assert_array_equal(ahead.anchor_rows, here.anchor_rows)
    # a turn's plan takes it; when working it out ahead failed, or has not started, the plan
    # works it out itself
    failed: Future[Around] = Future()
    failed.set_exception(RuntimeError("gone"))
    taken = conversation.around(config, recent, 3, Viewer())
    conversation.quiet("Why?")
    expected = taken.result(timeout=30).anchors  # worked out on the worker
    unstarted = conversation.around(config, recent, 3, Viewer())
    for ahead_of in (taken, failed, unstarted):
        plan = conversation.plan(config, recent, (2, Viewer(), ahead_of), 3, Viewer(), "Why?",
                                 [])
        assert plan.around.anchors == expected
    assert unstarted.cancelled()
    conversation.quiet("Why?")  # the job left waiting does nothing
    assert unstarted.cancelled()


def test_focus_asked_for_without_an_inject_starts_once_too_many_wait(serve: Serve) -> None:
    live = serve()
    names = stored(live)
    ids = {n: i for i, n in names.items() if n != "team"}
    config = MemoryInjectionConfig()
    empty = np.zeros(live.server.app.injector.retriever.embed_query("x").shape, np.float32)
    recent = [RecentTurn(1, "Who opened the bakery?", empty, votes=((ids["M0"], HIT_VOTE),))]
    conversation = Conversation(live.server.app.injector.retriever)
    asked = [conversation.around(config, recent, 2, Viewer()) for _ in range(MAX_WAITING)]
    assert len(conversation.waiting) == MAX_WAITING
    assert not any(f.done() for f in asked)
    conversation.around(config, recent, 2, Viewer())  # one too many: the oldest starts
    assert asked[0].result(timeout=30).anchors == (ids["M0"],)
    assert len(conversation.waiting) == MAX_WAITING
