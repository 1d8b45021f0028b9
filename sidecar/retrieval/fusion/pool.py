"""The candidate pool of one query: every label any source listed, with its rank in each."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from kernels.diversity import spread
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


@dataclass(frozen=True, slots=True)
class Fused:
    """The best candidates over every list, best first."""

    labels: np.ndarray
    scores: np.ndarray
    ranks: np.ndarray  # (candidates, lists): 1-based rank in each list, 0 = absent
    picked: np.ndarray  # their positions in the pool


def pool_of(lists: Sequence[Ranked]) -> Pool:
    labels = np.unique(np.concatenate([r.labels for r in lists]))
    ranks = np.zeros((len(labels), len(lists)), np.int32)
    for column, ranked in enumerate(lists):
        if len(ranked.labels):
            ranks[np.searchsorted(labels, ranked.labels), column] = np.arange(
                1, len(ranked.labels) + 1)
    return Pool(labels, ranks)


def age_s(live: LiveMemories, labels: np.ndarray) -> np.ndarray:
    """Seconds since each memory was last updated (the recency boost's input)."""
    ages: np.ndarray = (now_us() - live.updated_at[labels]) / US_PER_S
    return ages


def top(pool: Pool, scores: np.ndarray, order: np.ndarray, limit: int, live: LiveMemories,
        diversity: float) -> Fused:
    """The first ``limit`` of ``order``, spread over channels (``[retrieval]``
    ``channel_diversity``): a candidate yields ``diversity`` x the best fused score for each
    hit above it from its own channel; memories without a channel never yield."""
    if diversity > 0 and len(order):
        penalty = diversity * abs(float(scores[order[0]]))
        picked = spread(order, scores, live.channel[pool.labels], penalty, limit)
    else:
        picked = order[:limit]
    return Fused(pool.labels[picked], scores[picked], pool.ranks[picked], picked)
