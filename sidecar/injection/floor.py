"""The relevance floor of the contextual section.

A search hit is kept when its cosine to the turn text clears two absolute bars: the fixed
``contextual_min_score`` and, when ``background`` is on, the store's background for this
text (the mean cosine of the stored memories to it, ``sidecar.retrieval.background``) plus
``background`` x that cosine's standard deviation. When a relative floor is on, it must
also be close enough to the turn's best hit: cosine >= ``relative_floor`` x the best
cosine, OR fused score >= ``score_floor`` x the best fused score. A floor set to 0 is off.
The background and relative floors scale with the store: a big store returns many loosely
related hits that a fixed floor lets through, far below the turn's best and barely above
what any stored memory scores.

Channel affinity (``own_channel_boost``): in the fused-score floor, a hit written in the
turn's own channel counts ``1 + own_channel_boost`` times its fused score, so a hit of
another channel (or of none) must come closer to the best hit of the channel to stay. A
turn with no hit of its own channel, or a store whose memories carry no channel, sees the
floors above unchanged.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

# Below this many stored memories the background floor is off: a small store's spread says
# little, and a bar two spreads above its mean would keep only its top few memories.
BACKGROUND_MIN_MEMORIES = 1000


class Scored(Protocol):
    @property
    def cosine(self) -> float: ...

    @property
    def score(self) -> float: ...


@dataclass(frozen=True, slots=True)
class Floor:
    min_cosine: float  # absolute
    relative: float = 0.0  # x best cosine; 0 = off
    score: float = 0.0  # x best fused score; 0 = off
    background: float = 0.0  # standard deviations above the store's mean cosine; 0 = off
    own_channel: float = 0.0  # boost of the turn's own channel's fused scores; 0 = off


def passes(hits: Sequence[Scored], floor: Floor,
           background: tuple[float, float, int] = (0.0, 0.0, 0),
           own_channel: Sequence[bool] = ()) -> list[bool]:
    """Which ``hits`` (one turn's search results) clear the floor; ``background``: the
    (mean, standard deviation) of the turn text's cosine to the stored memories, and their
    number; ``own_channel``: per hit, written in the turn's channel (empty: none is)."""
    if not hits:
        return []
    scores = floored_scores(hits, own_channel, floor.own_channel)
    best_cosine = max(h.cosine for h in hits)
    best_score = max(scores)
    bar = max(floor.min_cosine, background_bar(floor, background))
    relative_on = floor.relative > 0 or floor.score > 0
    out = []
    for h, score in zip(hits, scores, strict=True):
        keep = h.cosine >= bar
        if keep and relative_on:
            keep = ((floor.relative > 0 and h.cosine >= floor.relative * best_cosine)
                    or (floor.score > 0 and score >= floor.score * best_score))
        out.append(keep)
    return out


def floored_scores(hits: Sequence[Scored], own_channel: Sequence[bool],
                   boost: float) -> list[float]:
    """The fused scores the score floor compares: a hit of the turn's own channel counts
    ``1 + boost`` times its own."""
    if boost <= 0 or not any(own_channel):
        return [h.score for h in hits]
    return [h.score * (1 + boost) if own else h.score
            for h, own in zip(hits, own_channel, strict=True)]


def background_bar(floor: Floor, background: tuple[float, float, int]) -> float:
    """The cosine ``floor.background`` standard deviations above the store's mean cosine to
    the turn text (-1 when that floor is off or the store is smaller than
    ``BACKGROUND_MIN_MEMORIES``)."""
    mean, sd, count = background
    if floor.background <= 0 or count < BACKGROUND_MIN_MEMORIES:
        return -1.0
    return mean + floor.background * sd
