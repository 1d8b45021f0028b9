"""Weighted reciprocal rank fusion over any number of ranked lists, plus the importance /
recency boost (the ``kernels.rrf`` kernel does the arithmetic)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from kernels.rrf import fuse
from sidecar.retrieval.config import RetrievalConfig
from sidecar.retrieval.fusion.pool import S_PER_DAY, Fused, Ranked, age_s, pool_of, top
from sidecar.retrieval.mirror import LiveMemories

__all__ = ["Fused", "Ranked", "fuse_ranked"]


def fuse_ranked(
    lists: Sequence[Ranked], live: LiveMemories, config: RetrievalConfig, limit: int
) -> Fused:
    """Fuse ``lists`` (importance and age read from the mirror); keep the top ``limit``."""
    pool = pool_of(lists)
    labels = pool.labels
    scores, order = fuse(
        pool.ranks, np.array([r.weight for r in lists], np.float64), config.rrf_k,
        live.importance[labels], age_s(live, labels), config.alpha, config.beta,
        config.recency_half_life_days * S_PER_DAY, labels,
    )
    return top(pool, scores, order, limit, live, config.channel_diversity)
