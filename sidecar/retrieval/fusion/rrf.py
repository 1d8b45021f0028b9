"""Weighted reciprocal rank fusion over any number of ranked lists, plus the importance /
recency boost (the ``kernels.rrf`` kernel does the arithmetic)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from kernels.rrf import fuse
from sidecar.retrieval.config import RetrievalConfig
from sidecar.retrieval.mirror import LiveMemories
from sidecar.timing import now_us

US_PER_S = 1_000_000
S_PER_DAY = 86_400.0


@dataclass(frozen=True, slots=True)
class Ranked:
    """One source's answer to a query."""

    name: str
    weight: float
    labels: np.ndarray  # int64, best first


@dataclass(frozen=True, slots=True)
class Fused:
    """The best candidates over every list, best first."""

    labels: np.ndarray
    scores: np.ndarray
    ranks: np.ndarray  # (candidates, lists): 1-based rank in each list, 0 = absent


def fuse_ranked(
    lists: Sequence[Ranked], live: LiveMemories, config: RetrievalConfig, limit: int
) -> Fused:
    """Fuse ``lists`` (importance and age read from the mirror); keep the top ``limit``."""
    labels = np.unique(np.concatenate([r.labels for r in lists]))
    ranks = np.zeros((len(labels), len(lists)), np.int32)
    for column, ranked in enumerate(lists):
        if len(ranked.labels):
            ranks[np.searchsorted(labels, ranked.labels), column] = np.arange(
                1, len(ranked.labels) + 1)
    age_s = (now_us() - live.updated_at[labels]) / US_PER_S
    scores, order = fuse(
        ranks, np.array([r.weight for r in lists], np.float64), config.rrf_k,
        live.importance[labels], age_s, config.alpha, config.beta,
        config.recency_half_life_days * S_PER_DAY, labels,
    )
    top = order[:limit]
    return Fused(labels[top], scores[top], ranks[top])
