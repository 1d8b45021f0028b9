"""Normalised score fusion: a weighted sum of each source's score normalised per query over
the candidate pool, plus the importance / recency boost (``kernels.score_fusion``).

The vector source's column is the exact query cosine of every candidate (not only of those
it listed), so a BM25 or graph find is weighed by its real similarity. The other sources
score what they listed; a candidate they did not list gets 0 from them under ``max``, their
worst normalised score under ``minmax`` and ``zscore``.

The fused score's meaning (what a threshold on it compares): under ``max`` (the default)
each source contributes its share x its score as a fraction of its best score for this
query, so a candidate that is best in every source scores the full sum of the shares, and a
hit scoring half the best is half as well supported. It is relative to the query's own
candidates: compare it with the best hit's score, not across queries (``Hit.cosine`` is the
absolute measure).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from kernels.score_fusion import fuse_scores
from sidecar.retrieval.config import RetrievalConfig
from sidecar.retrieval.fusion.pool import S_PER_DAY, Fused, Pool, Ranked, age_s, top
from sidecar.retrieval.mirror import LiveMemories
from sidecar.retrieval.stages import VECTOR


def fuse_pool_scores(
    pool: Pool, lists: Sequence[Ranked], cosines: np.ndarray | None, live: LiveMemories,
    config: RetrievalConfig, limit: int,
) -> Fused:
    """Fuse ``lists`` over ``pool``; ``cosines``: the query cosine of each pool label (nan
    where unknown) standing in for the vector list's scores, or None to use that list."""
    labels = pool.labels
    values = np.zeros(pool.ranks.shape, np.float64)
    present = pool.ranks > 0
    for column, ranked in enumerate(lists):
        if ranked.name == VECTOR and cosines is not None:
            present[:, column] = np.isfinite(cosines)
            values[present[:, column], column] = cosines[present[:, column]]
        elif len(ranked.labels):
            values[pool.ranks[:, column] > 0, column] = _by_rank(pool, column, ranked)
    scores, order = fuse_scores(
        values, present, np.array([r.weight for r in lists], np.float64),
        config.score_normalisation, live.importance[labels], age_s(live, labels),
        config.alpha, config.beta, config.recency_half_life_days * S_PER_DAY, labels,
    )
    return top(pool, scores, order, limit)


def _by_rank(pool: Pool, column: int, ranked: Ranked) -> np.ndarray:
    """The list's scores, in pool order of the labels it holds."""
    ranks = pool.ranks[:, column]
    scores: np.ndarray = ranked.scores[ranks[ranks > 0] - 1]
    return scores
