"""The candidate pool of one query: every label any source listed, with its rank in each."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from kernels.pool import pool_arrays
from sidecar.retrieval.mirror import LiveMemories
from sidecar.timing import now_us

US_PER_S = 1_000_000
S_PER_DAY = 86_400.0


@dataclass(frozen=True, slots=True)
class Ranked:
    """One source's answer to a query, with its weight in the fusion in force."""

    name: str
    weight: float
    labels: np.ndarray  # int64, best first
    scores: np.ndarray = field(default_factory=lambda: np.zeros(0))  # the source's own


@dataclass(frozen=True, slots=True)
class Pool:
    labels: np.ndarray  # int64, ascending, distinct
    ranks: np.ndarray  # (candidates, lists): 1-based rank in each list, 0 = absent
    values: np.ndarray  # (candidates, lists): each list's own score, 0 = absent


@dataclass(frozen=True, slots=True)
class Fused:
    """The best candidates over every list, best first."""

    labels: np.ndarray
    scores: np.ndarray
    ranks: np.ndarray  # (candidates, lists): 1-based rank in each list, 0 = absent
    picked: np.ndarray  # their positions in the pool


def pool_of(lists: Sequence[Ranked]) -> Pool:
    """The pool of ``lists`` (a list without scores scores 0), built by ``kernels.pool``."""
    ends = [0]
    for r in lists:
        ends.append(ends[-1] + len(r.labels))
    scores = [r.scores if len(r.scores) == len(r.labels) else np.zeros(len(r.labels))
              for r in lists]
    return Pool(*pool_arrays(np.concatenate([r.labels for r in lists]),
                             np.concatenate(scores), np.array(ends)))


def age_s(live: LiveMemories, labels: np.ndarray) -> np.ndarray:
    """Seconds since each memory was last updated (the recency boost's input)."""
    ages: np.ndarray = (now_us() - live.updated_at[labels]) / US_PER_S
    return ages


def top(pool: Pool, scores: np.ndarray, order: np.ndarray, limit: int) -> Fused:
    picked = order[:limit]
    return Fused(pool.labels[picked], scores[picked], pool.ranks[picked], picked)
