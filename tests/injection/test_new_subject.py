"""Which follow-ups are a new subject, searched alone (neither steered nor focused): those whose
own best hit, far from the focus, is as close as a near restatement (real server, model and
SQLite file)."""

from __future__ import annotations

from memsidecar.v1 import injection_pb2 as inj

from sidecar.injection.config import MemoryInjectionConfig
from tests.injection.conftest import Serve
from tests.injection.helpers import put
from tests.injection.test_focus import MARIA, TALK
from tests.injection.test_own_hits import Loop
from tests.injection.test_query_context import FACTS

NEW_SUBJECT = MemoryInjectionConfig().query_context_new_subject
# Terse questions on the team facts (another writer), asked after a talk about Maria's bakery.
SWITCH = ["When is team lunch?", "Where is staging?", "Who made Batman?", "Where's the cat?",
          "What about the VPN?", "And the coffee beans?"]


def test_a_new_subject_needs_an_own_hit_as_close_as_a_restatement(serve: Serve) -> None:
    live = serve(max_total=5)
    for fact in FACTS:
        put(live, fact, source="team")
    for note in MARIA:
        put(live, note, source="notes")
    kinds = set()
    for n, text in enumerate(SWITCH):
        loop = Loop(live, f"c{n}")
        for asked, reply in TALK[:3]:
            loop.turn(asked, reply)
        got, _ = loop.turn(text, "")
        turn = live.injection.GetInjectionTrace(
            inj.GetInjectionTraceRequest(channel_id=f"c{n}")).turns[-1]
        best = turn.injected[0]  # its own best hit (one of the team facts) comes first
        assert best.id == got.items[0].id and best.cosine > 0.3
        new = best.cosine >= NEW_SUBJECT
        assert (turn.context_gate == 0) == new, (text, best.cosine)  # all a few words long
        assert not new or not turn.focus_offered
        kinds.add("new" if new else "moderate" if best.cosine >= 0.5 else "weak")
    # a moderately close hit elsewhere (as an elliptical follow-up's in another document
    # often is) leaves the turn a follow-up: its own hits first, the focus's offers after
    assert kinds == {"new", "moderate", "weak"}
