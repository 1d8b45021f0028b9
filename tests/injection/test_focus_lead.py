"""Where the focus's offers go in a follow-up's block: those scoring at least
``query_context_focus_lead`` before the turn's own hits beyond the guaranteed ones, the others
after every own hit; and which of the steered search's hits it takes: those reading like the
focus (real server, model and SQLite file)."""

from __future__ import annotations

import pytest
from memsidecar.v1 import injection_pb2 as inj

from sidecar.conversation.focus import Around, Focused, reads_like
from sidecar.conversation.room import merged
from sidecar.embedding import Embedder
from sidecar.injection.config import MemoryInjectionConfig
from sidecar.injection.pools import ContextualPool
from sidecar.injection.types import Candidate, Section
from sidecar.records import Memory, MemoryType
from tests.conftest import Running
from tests.injection.conftest import Serve
from tests.injection.helpers import ids, inject, put
from tests.injection.test_focus import JONAS, MARIA, TALK, TERSE
from tests.injection.test_own_hits import Loop
from tests.injection.test_query_context import FACTS, configure

OWN_HITS = 1  # the guarantee, small enough that further own hits share the block with offers
KEEP = 1  # blocks the history keeps: no earlier block in view, so own hits come again
LEAD = MemoryInjectionConfig().query_context_focus_lead
COHESION = MemoryInjectionConfig().query_context_focus_cohesion
# Maria's bakery, then questions whose own hits are in both bakeries' notes (Jonas's written by
# another writer: never in the focus's neighbourhood).
ASKED = [*TALK[:2], ("Who delivers the bread?", "Her brother Tomas, by bicycle."),
         ("What does the bakery sell?", "Cinnamon buns on Saturdays."),
         ("What broke in the bakery?", "Her oven."), ("Who paid for the oven?", "A neighbour."),
         ("Where is the bakery?", "On Elm Street."), *TERSE]


def stored_apart(live: Running) -> None:
    """The team facts, Jonas's notes and Maria's, each by a writer of its own."""
    for fact in FACTS:
        put(live, fact, source="team")
    for note in JONAS:
        put(live, note, source="jonas")
    for note in MARIA:
        put(live, note, source="notes")


@pytest.mark.parametrize("lead", [LEAD, 1.0])
def test_offers_scoring_under_the_lead_come_after_every_own_hit(serve: Serve,
                                                                 lead: float) -> None:
    live = serve(max_total=5, max_injected_blocks_in_history=KEEP)
    stored_apart(live)
    loop = Loop(live, "talk")
    before = after = 0  # offers placed before / after a further own hit of their turn
    for n, (text, reply) in enumerate(ASKED):
        configure(live, max_total=5, query_context_turns=0)
        alone = ids(inject(live, text, channel=f"alone-{n}"))  # the own hits, best first
        configure(live, max_total=5, query_context_own_hits=OWN_HITS,
                  query_context_focus_lead=lead, max_injected_blocks_in_history=KEEP)
        got, _ = loop.turn(text, reply)
        turn = live.injection.GetInjectionTrace(
            inj.GetInjectionTraceRequest(channel_id="talk")).turns[-1]
        block = [i.id for i in turn.injected]
        assert block == ids(got)
        own = [block.index(m) for m in alone if m in block]
        further = [block.index(m) for m in alone[OWN_HITS:] if m in block]
        for item in turn.injected:
            if item.id not in turn.focus_offered:  # beyond the turn's own hits
                continue
            at = block.index(item.id)
            if item.score < lead:  # trailing: after every own hit
                assert all(at > k for k in own), (text, block, alone)
            before += any(at < k for k in further)
            after += any(at > k for k in further)
    # the conversation put the order to the test: offers shared blocks with further own hits
    assert after
    if lead == 1.0:  # no offer scores that much (cosine + the BM25 share): none leads
        assert not before


def test_the_steered_hits_a_focused_block_takes_are_those_reading_like_an_anchor(
        embedder: Embedder) -> None:
    texts = [*MARIA[:2], JONAS[3], FACTS[12]]  # anchors; another bakery; the staging cluster
    vectors = embedder.embed(texts)
    memories = [Memory(id=f"m{k}", content=t, type=MemoryType.FACT, importance=0.5,
                       created_at=0, updated_at=0, last_accessed_at=0, access_count=0,
                       source="notes", channel_id="", agent_id="a", forgotten=False,
                       version=1, seq=k + 1) for k, t in enumerate(texts)]
    hits = [Candidate(memory=m, section=Section.CONTEXTUAL, score=1.0, cosine=0.3,
                      embedding=v) for m, v in zip(memories, vectors, strict=True)]
    taken = Around(anchors=("m0", "m1"), ids=("m0", "m1"), anchor_rows=vectors[:2])
    assert [reads_like(taken, c, COHESION) for c in hits[2:]] == [True, False]
    own = ContextualPool([], 0, vectors[0], vectors[0], 0)
    pool = ContextualPool(hits[2:], 0, vectors[0], vectors[0], 0)
    focused = Focused(taken.anchors, akin=frozenset(
        c.memory.id for c in pool.answers if reads_like(taken, c, COHESION)))
    assert [c.memory.id for c in merged(own, focused, pool)] == ["m2"]
    assert [c.memory.id for c in merged(own, Focused(), pool)] == ["m2", "m3"]  # no focus
