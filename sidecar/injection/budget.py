"""The budget: pinned first (guaranteed slots), contextual fills the rest; a count cap
(``max_total``) and an optional token cap (``max_tokens``, 0 = off) on the whole block."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from sidecar.injection.blocks import BLOCK_PREFIX, CONTEXTUAL_HEADER, PINNED_HEADER
from sidecar.injection.types import Candidate, Section

CountTokens = Callable[[str], int]


@dataclass(frozen=True, slots=True)
class Budgeted:
    selected: list[tuple[Candidate, str]]  # with its block line
    dropped: int


def apply_budget(candidates: list[Candidate], lines: list[str], max_total: int,
                 max_tokens: int, count_tokens: CountTokens, reserve: int = 0) -> Budgeted:
    """Keep candidates in order (pinned are first) while both caps hold.

    A candidate whose line would overflow ``max_tokens`` is dropped and the next, shorter
    one may still fit. Token counts are additive over lines because the block's separators
    are whitespace, so the sum is the block's exact count. ``reserve``: tokens set aside for
    the block's marker line.
    """
    order = sorted(range(len(candidates)),
                   key=lambda i: 0 if candidates[i].section is Section.PINNED else 1)
    selected: list[tuple[Candidate, str]] = []
    used = count_tokens(BLOCK_PREFIX) + reserve if max_tokens else 0
    if max_tokens and used > max_tokens:
        return Budgeted(selected=[], dropped=len(candidates))
    headers: set[Section] = set()
    for i in order:
        if len(selected) >= max(max_total, 0):
            break
        candidate, line = candidates[i], lines[i]
        if max_tokens:
            cost = count_tokens(line)
            if candidate.section not in headers:
                cost += count_tokens(_HEADER[candidate.section])
            if used + cost > max_tokens:
                continue
            used += cost
        headers.add(candidate.section)
        selected.append((candidate, line))
    return Budgeted(selected=selected, dropped=len(candidates) - len(selected))


_HEADER = {Section.PINNED: PINNED_HEADER, Section.CONTEXTUAL: CONTEXTUAL_HEADER}
