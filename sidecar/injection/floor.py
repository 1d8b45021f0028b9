"""The relevance floor of the contextual section.

A search hit is kept when its cosine to the turn text is at least ``contextual_min_score``
(absolute) and, when a relative floor is on, it is close enough to the turn's best hit:
cosine >= ``relative_floor`` x the best cosine, OR fused score >= ``score_floor`` x the best
fused score, OR cosine >= the store's background for this text (the mean cosine of the
stored memories to it) + ``background`` x that cosine's standard deviation
(``sidecar.retrieval.background``). A floor set to 0 is off; with all three off only the
absolute floor applies. These floors scale with the store: a big store returns many loosely
related hits that the absolute floor lets through, far below the turn's best and barely above
what any stored memory scores.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol


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


def passes(hits: Sequence[Scored], floor: Floor,
           background: tuple[float, float] = (0.0, 0.0)) -> list[bool]:
    """Which ``hits`` (one turn's search results) clear the floor; ``background``: the
    (mean, standard deviation) of the turn text's cosine to the stored memories."""
    if not hits:
        return []
    best_cosine = max(h.cosine for h in hits)
    best_score = max(h.score for h in hits)
    bar = background_bar(floor, background)
    relative_on = floor.relative > 0 or floor.score > 0 or bar is not None
    out = []
    for h in hits:
        keep = h.cosine >= floor.min_cosine
        if keep and relative_on:
            keep = ((floor.relative > 0 and h.cosine >= floor.relative * best_cosine)
                    or (floor.score > 0 and h.score >= floor.score * best_score)
                    or (bar is not None and h.cosine >= bar))
        out.append(keep)
    return out


def background_bar(floor: Floor, background: tuple[float, float]) -> float | None:
    """The cosine ``floor.background`` standard deviations above the store's mean cosine to
    the turn text; None when that floor is off."""
    if floor.background <= 0:
        return None
    mean, sd = background
    return mean + floor.background * sd
