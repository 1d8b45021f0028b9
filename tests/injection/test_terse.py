"""A terse turn's text alone: what it finds counts only when it matches one of its terms and
comes close enough (``terse_terms``, ``terse_min_score``), on the real server and model."""

from __future__ import annotations

from tests.injection.conftest import Serve
from tests.injection.helpers import inject, put
from tests.injection.test_query_context import configure

STORY = ["Cotton was a little white kitten who lived in a barn.",
         "Cotton wanted to be orange like her sisters.",
         "He ran to the shop down the road to buy a newspaper.",
         "She did her homework at the kitchen table before dinner.",
         "They went to the lake and did nothing all afternoon.",
         "The old man painted his fence green every spring."]


def test_a_turn_of_no_term_finds_nothing_by_itself(serve: Serve) -> None:
    live = serve(max_total=5)
    for text in STORY:
        put(live, text)
    configure(live, max_total=5, terse_terms=0)
    loose = inject(live, "What did he do?", channel="off")
    assert loose.items  # the embedding alone puts loose matches over the floors
    configure(live, max_total=5, terse_terms=4)
    strict = inject(live, "What did he do?", channel="on")
    assert not strict.items
    assert strict.stats.below_min_score >= len(loose.items)


def test_a_terse_turn_keeps_what_matches_its_terms(serve: Serve) -> None:
    live = serve(max_total=5)
    written = {put(live, text).id: text for text in STORY}
    configure(live, max_total=5, terse_terms=0)
    loose = inject(live, "What color was Cotton?", channel="off")
    configure(live, max_total=5, terse_terms=4)
    matched = inject(live, "What color was Cotton?", channel="on")
    assert matched.items and "Cotton" in written[matched.items[0].id]
    assert all("cotton" in written[item.id].lower() for item in matched.items)  # the term
    assert {i.id for i in matched.items} <= {i.id for i in loose.items}
    configure(live, max_total=5, terse_terms=4, terse_min_score=0.45)
    close = inject(live, "What color was Cotton?", channel="close")
    assert all(item.cosine >= 0.45 - 1e-6 for item in close.items)  # and the cosine
    assert {i.id for i in close.items} <= {i.id for i in matched.items}
    # a turn of more terms than terse_terms is floored as before
    long = "Which colour did the little white kitten in the barn want to be?"
    configure(live, max_total=5, terse_terms=0)
    before = inject(live, long, channel="off-long")
    configure(live, max_total=5, terse_terms=4)
    after = inject(live, long, channel="on-long")
    assert [i.id for i in after.items] == [i.id for i in before.items]
