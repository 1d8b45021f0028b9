"""Channel affinity in the relevance floor: a hit written in the turn's own channel counts
(1 + own_channel_boost) x its fused score in score_floor."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from memsidecar.v1 import injection_pb2 as inj

from sidecar.injection.floor import Floor, floored_scores, passes
from tests.conftest import Running
from tests.injection.conftest import Serve
from tests.injection.helpers import ids, inject, put


@dataclass(frozen=True)
class H:
    cosine: float
    score: float


HITS = [H(0.80, 0.030), H(0.60, 0.012), H(0.60, 0.012)]  # the last two equally similar
OWN = [True, False, True]


def test_own_channel_scores_count_more_in_the_score_floor() -> None:
    assert floored_scores(HITS, OWN, 0.5) == pytest.approx([0.045, 0.012, 0.018])
    # best 0.030 x 0.3 = 0.009: all three stay without channels
    assert passes(HITS, Floor(0.25, score=0.3)) == [True, True, True]
    # best counted 0.045 x 0.3 = 0.0135: the other channel's hit is cut, its twin of the
    # turn's channel (counted 0.018) stays
    assert passes(HITS, Floor(0.25, score=0.3, own_channel=0.5), own_channel=OWN) == [
        True, False, True]


def test_no_own_channel_hit_leaves_the_floor_unchanged() -> None:
    floor = Floor(0.25, score=0.3, own_channel=0.75)
    plain = passes(HITS, Floor(0.25, score=0.3))
    assert passes(HITS, floor) == plain  # no channels given
    assert passes(HITS, floor, own_channel=[False] * 3) == plain
    assert floored_scores(HITS, [False] * 3, 0.75) == [h.score for h in HITS]
    # off, and with the fused-score floor off the boost cuts nothing
    assert passes(HITS, Floor(0.25, score=0.3), own_channel=OWN) == plain
    assert passes(HITS, Floor(0.25, own_channel=5.0), own_channel=OWN) == [True] * 3


BEST = "We chose PostgreSQL 16 as the main database for the billing service."
# At 0.4-0.7 x the best fused score for the question: kept by score_floor 0.4 alone, cut
# when the best counts 1.75 x its score.
NEAR = "The billing service runs on three pods."
QUESTION = "Which database does the billing service use?"
OTHERS = ["The office cat sleeps on the windowsill every afternoon.",
          "Lunch is served at noon on Fridays.", "The team offsite is in Lisbon this year.",
          "Ana prefers tea to coffee.", "The printer on the second floor is out of toner."]
F = inj.DropReason.DROP_REASON_FLOOR


def floor_drops(live: Running, channel: str) -> dict[str, float]:
    """The fused scores of the hits the channel's last turn dropped under the floor."""
    turns = live.injection.GetInjectionTrace(inj.GetInjectionTraceRequest(
        channel_id=channel)).turns
    return {d.id: d.score for d in turns[-1].dropped if d.reason == F}


def test_the_own_channel_copy_is_kept_and_the_other_channel_copy_cut(serve: Serve) -> None:
    live = serve(own_channel_boost=0.75, score_floor=0.4)
    best = put(live, BEST, channel_id="ops")
    ours = put(live, NEAR, channel_id="ops")
    theirs = put(live, NEAR, channel_id="sales")  # the same text: equally similar
    for text in OTHERS:
        put(live, text)
    reply = inject(live, QUESTION, channel="ops")
    assert ids(reply) == [best.id, ours.id]
    cut = floor_drops(live, "ops")
    # the copy clears 0.4 x the best's score, not 0.4 x 1.75 x it
    assert 0.4 < cut[theirs.id] / reply.items[0].score < 0.7
    assert cut[theirs.id] == pytest.approx(reply.items[1].score)
    # From the other side the sales copy is the channel's own and is kept with the best hit.
    other = inject(live, QUESTION, channel="sales")
    assert ids(other) == [best.id, theirs.id]


def test_without_channels_the_floor_is_as_before(serve: Serve) -> None:
    texts = [BEST, NEAR, *OTHERS]
    channels = ["", "", "", "elsewhere", "", "", ""]  # nowhere, or in a channel not asking
    off = serve(own_channel_boost=0.0)
    for text, channel in zip(texts, channels, strict=True):
        put(off, text, channel_id=channel)
    before = inject(off, QUESTION, channel="ops")
    off.close()  # one server per data dir: the same store, reopened with the boost
    on = serve(own_channel_boost=0.75)
    after = inject(on, QUESTION, channel="ops-2")  # a channel whose cooldown is empty too
    assert ids(after) == ids(before)
    assert len(ids(before)) >= 2  # the floor kept more than the best hit
    assert [i.score for i in after.items] == pytest.approx([i.score for i in before.items])
