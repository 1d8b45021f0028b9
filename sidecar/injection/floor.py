"""The relevance floor of the contextual section.

A search hit is kept when its cosine to the turn text is at least ``contextual_min_score``
(absolute) and, when a relative floor is on, it is close enough to the turn's best hit:
cosine >= ``relative_floor`` x the best cosine, OR fused score >= ``score_floor`` x the best
fused score (a floor set to 0 is off; with both off only the absolute floor applies). The
relative floors scale with the store: a big store returns many loosely related hits that the
absolute floor lets through, far below the turn's best.
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


def passes(hits: Sequence[Scored], floor: Floor) -> list[bool]:
    """Which ``hits`` (one turn's search results) clear the floor."""
    if not hits:
        return []
    best_cosine = max(h.cosine for h in hits)
    best_score = max(h.score for h in hits)
    relative_on = floor.relative > 0 or floor.score > 0
    out = []
    for h in hits:
        keep = h.cosine >= floor.min_cosine
        if keep and relative_on:
            keep = ((floor.relative > 0 and h.cosine >= floor.relative * best_cosine)
                    or (floor.score > 0 and h.score >= floor.score * best_score))
        out.append(keep)
    return out
