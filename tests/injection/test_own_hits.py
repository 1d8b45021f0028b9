"""The conversation adds and never takes away: over a seeded random conversation, every memory
a turn's text alone would inject is in its block or already in view (real server, model and
SQLite file)."""

from __future__ import annotations

import random
from dataclasses import replace

import numpy as np
import pytest
from memsidecar.v1 import injection_pb2 as inj

from sidecar.conversation.focus import NONE as NO_FOCUS
from sidecar.conversation.focus import Focused
from sidecar.conversation.room import merged
from sidecar.injection.budget import apply_budget
from sidecar.injection.dedup import dedup, kept_first
from sidecar.injection.freshness import changed_since_injected
from sidecar.injection.pools import ContextualPool
from sidecar.injection.state import ChannelState
from sidecar.injection.types import Candidate, Section
from tests.conftest import Running
from tests.injection.conftest import Serve
from tests.injection.helpers import ids, inject, put
from tests.injection.test_blocks_budget import memory
from tests.injection.test_focus import stored
from tests.injection.test_query_context import configure

# Questions on the stored subjects (the bakeries, the team facts, the creators), terse
# follow-ups, repeats and chit-chat, drawn at random.
ASKED = [
    "Who opened the bakery on Elm Street?", "When does she bake?", "What broke last winter?",
    "Who paid for the new one?", "Who runs the bakery on Harbour Road?", "How was it paid?",
    "What does his bakery sell?", "Who delivers the bread?", "Why?", "And then?",
    "What else?", "Where is the staging cluster?", "When does the VPN certificate expire?",
    "Which database stores the invoices?", "When is team lunch?", "Where do the coffee beans "
    "come from?", "When is the mobile app released?", "Who created Batman?",
    "Who created him?", "Where does the office cat sleep?", "What about the deploy pipeline?",
    "ok thanks", "lol", "cool", "I see.",
]
REPLIES = ["Maria, in 2019.", "Every morning at four.", "The oven.", "A neighbour.",
           "Jonas.", "With a loan.", "Rye bread and pretzels.", "Her brother Tomas.", "",
           "Frankfurt.", "At the end of March.", "PostgreSQL 16.", "You're welcome!"]
TURNS = 60


class Loop:
    """The README's agent loop on one channel (PruneHistory keeping the configured blocks ->
    Inject -> block, text, reply), knowing which memories the model has in view."""

    def __init__(self, live: Running, channel: str) -> None:
        self.live, self.channel = live, channel
        self.history: list[inj.Message] = []
        self.blocks: dict[str, set[str]] = {}  # block text -> its memories

    def turn(self, text: str, reply: str) -> tuple[inj.InjectResponse, set[str]]:
        """The turn's reply and the memories in view before it (the blocks the pruned
        history still holds)."""
        pruned = self.live.injection.PruneHistory(inj.PruneHistoryRequest(
            messages=self.history, channel_id=self.channel))
        self.history = list(pruned.messages)
        held = set().union(*(self.blocks.get(m.content, set()) for m in self.history))
        got = inject(self.live, text, channel=self.channel)
        if got.block:
            self.blocks[got.block] = set(ids(got))
            self.history.append(inj.Message(role=inj.ROLE_USER, content=got.block))
        self.history += [inj.Message(role=inj.ROLE_USER, content=text),
                         inj.Message(role=inj.ROLE_ASSISTANT, content=reply)]
        return got, held


@pytest.mark.parametrize(("max_total", "own_hits"), [(3, 0), (5, 0), (5, 3), (5, 1)])
def test_what_the_text_alone_injects_first_is_in_the_block_or_in_view(
        serve: Serve, max_total: int, own_hits: int) -> None:
    """The first ``own_hits`` (0: every one) memories the text alone injects."""
    live = serve(max_total=max_total)
    stored(live)
    rng = random.Random(39 + max_total + own_hits)
    loop = Loop(live, "talk")
    checked = tested = 0
    for n in range(TURNS):
        text, reply = rng.choice(ASKED), rng.choice(REPLIES)
        configure(live, max_total=max_total, query_context_turns=0)
        alone = ids(inject(live, text, channel=f"alone-{n}"))  # in the search's ranking
        guaranteed = set(alone[:own_hits] if own_hits else alone)
        configure(live, max_total=max_total, query_context_own_hits=own_hits)
        got, held = loop.turn(text, reply)
        assert guaranteed <= set(ids(got)) | held, (n, text)
        checked += len(guaranteed)
        tested += bool(guaranteed)
    # the property was put to the test on most turns, not met by empty blocks
    assert tested > TURNS // 2 and checked >= tested
    traced = live.injection.GetInjectionTrace(inj.GetInjectionTraceRequest(channel_id="talk"))
    for turn in traced.turns:  # each memory once a turn, in the place that decided it
        named = [i.id for i in turn.injected] + [d.id for d in turn.dropped]
        assert len(named) == len(set(named)), turn.turn
        assert set(turn.focus_offered) <= set(named)


# Near-duplicates of stored notes (cosine above semantic_threshold to them), written by
# another writer: a block holds one of each pair.
TWINS = ["Maria opened a little bakery on Elm Street in 2019.",
         "Jonas runs the bakery at Harbour Road.",
         "Last winter the oven on Harbour Road broke down.",
         "She bakes sourdough bread each morning at four."]


@pytest.mark.parametrize("max_total", [4, 5])
def test_an_own_hit_left_out_as_a_duplicate_gives_its_place_to_the_next(
        serve: Serve, max_total: int) -> None:
    """Over a seeded conversation on a store holding near-duplicates, the text alone's
    first 3 memories are in the block or in view, or left out as a duplicate of a memory in
    view (its trace says so)."""
    live = serve(max_total=max_total)
    stored(live)
    for text in TWINS:
        put(live, text, source="copies")
    rng = random.Random(48 + max_total)
    loop = Loop(live, "twins")
    checked = 0
    for n in range(TURNS):
        text, reply = rng.choice(ASKED[:11]), rng.choice(REPLIES)
        configure(live, max_total=max_total, query_context_turns=0)
        alone = ids(inject(live, text, channel=f"alone-{n}"))[:3]
        configure(live, max_total=max_total)
        got, held = loop.turn(text, reply)
        shown = set(ids(got)) | held
        twins = {d.id for d in live.injection.GetInjectionTrace(inj.GetInjectionTraceRequest(
            channel_id="twins", last_n=1)).turns[-1].dropped
            if d.reason == inj.DROP_REASON_SEMANTIC_DUPLICATE and d.duplicate_of in held}
        assert set(alone) <= shown | twins, (n, text)
        checked += len(set(alone) - held)
    assert checked > TURNS // 2  # put to the test, not met by what is in view


def test_a_content_free_turn_gets_nothing_and_moves_no_vote(serve: Serve) -> None:
    live = serve()
    stored(live)
    loop = Loop(live, "c")
    loop.turn("Who opened the bakery on Elm Street?", "Maria, in 2019.")
    state = live.server.app.injector.states.get("c")
    for chatter in ("ok thanks", "lol", "cool", "I see.", "\N{THUMBS UP SIGN}"):
        got, _ = loop.turn(chatter, "You're welcome!")
        assert not got.items and got.skip_reason == "content_free"
        first = state.recent[0]
        assert first.turn == 1 and first.reply == "Maria, in 2019." and first.reply_votes
        votes = {v for r in state.recent for v in (*r.votes, *r.reply_votes)}
        assert votes == {*first.votes, *first.reply_votes}  # the chatter cast none
    assert [r.turn for r in state.recent] == [1, 6]  # of the chatter, the latest waits
    loop.turn("and?", "")
    # a continuation asks for more of the thread: searched with its context
    turns = live.injection.GetInjectionTrace(inj.GetInjectionTraceRequest(channel_id="c")).turns
    assert turns[-1].context_gate == 1 and [c.turn for c in turns[-1].context] == [1]


def test_the_guarantee_counts_the_own_hits_dedup_keeps() -> None:
    """The own hits nothing displaces are the first ``query_context_own_hits`` that dedup
    keeps, as the pipeline composes them (merged -> dedup -> budget): a near-duplicate among
    the text's first hits does not take a guaranteed place, and the hit after it keeps its
    place before the focus's leading offers."""
    rows = np.eye(6, 8, dtype=np.float32)
    rows[1] = rows[0] + 0.05  # a near-duplicate of the first hit
    rows[1] /= np.linalg.norm(rows[1])
    own = [candidate(f"own{i}", rows[i]) for i in range(4)]  # own0, its twin, own2, own3
    offers = tuple(candidate(f"offer{i}", rows[4 + i]) for i in range(2))
    pool = ContextualPool(own, 0, rows[0], rows[0], 0)
    focused = Focused(("anchor",), offers, leading=2, akin=frozenset())
    state = ChannelState("c")
    first, kept = kept_first(own, state, frozenset(), 0.85, 3)
    assert (first, kept) == (4, 3)
    chosen = block_of(merged(pool, focused, None, first), state, max_total=4)
    alone = block_of(merged(pool, NO_FOCUS, None, 0), state, max_total=4)[:3]
    assert alone == ["own0", "own2", "own3"] and chosen == ["own0", "own2", "own3", "offer0"]
    # counting the twin among the three would let the offers take own3's place
    assert block_of(merged(pool, focused, None, 3), state, 4) == [
        "own0", "own2", "offer0", "offer1"]
    assert kept_first(own, state, frozenset(), 0.85, 0) == (4, 3)  # 0: all of them
    assert kept_first(own[:1], state, frozenset(), 0.85, 3) == (1, 1)


def candidate(name: str, row: np.ndarray) -> Candidate:
    return Candidate(memory=replace(memory(0, name), id=name), section=Section.CONTEXTUAL,
                     score=1.0, cosine=0.5, embedding=row)


def block_of(candidates: list[Candidate], state: ChannelState, max_total: int) -> list[str]:
    kept = dedup(candidates, state, frozenset(), 0.85, changed_since_injected).kept
    lines = [c.memory.content for c in kept]
    return [c.memory.id for c, _ in apply_budget(kept, lines, max_total, 0, len).selected]


def test_kept_first_is_what_dedup_keeps_of_the_whole_list() -> None:
    """``kept_first`` looks at a prefix only: the same answer as ``dedup`` of every hit, over
    random lists with near-duplicates (the reference)."""
    rng = np.random.default_rng(50)
    pick = random.Random(50)
    state = ChannelState("c")
    for _ in range(300):
        size = pick.randint(0, 12)
        rows = rng.standard_normal((size, 16)).astype(np.float32)
        for j in range(1, size):
            if pick.random() < 0.5:  # a near-duplicate of an earlier hit
                rows[j] = rows[pick.randrange(j)] + 0.05 * rng.standard_normal(16)
        rows /= np.maximum(np.linalg.norm(rows, axis=1, keepdims=True), 1e-9)
        hits = [candidate(f"h{i}", rows[i]) for i in range(size)]
        names = [c.memory.id for c in hits]
        kept = [names.index(c.memory.id) for c in dedup(
            hits, state, frozenset(), 0.85, changed_since_injected).kept]
        for n in range(6):
            want = ((kept[n - 1] + 1, n) if 0 < n <= len(kept) else (size, len(kept)))
            assert kept_first(hits, state, frozenset(), 0.85, n) == want, (size, n)
