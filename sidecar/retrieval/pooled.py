"""Score fusion with the exact cosine of every candidate, in one kernel call.

The fast path of the engine's score fusion (``kernels.pool_fusion``): the pool of the
sources' lists, each candidate's cosine read from the dense vector matrix, the normalised
fusion and boost of ``fusion.scores``, without per-candidate Python objects; then the
winners are picked as ``fusion.scores`` picks them (``fusion.pool.top``) and their rows
copied. The reference it is tested against is the composition it replaces:
``fusion.pool.pool_of``, ``VectorIndex.rows_of`` times the query, ``fuse_pool_scores``.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from kernels.pool_fusion import pool_fusion
from kernels.score_fusion import NORMALISATIONS
from sidecar.retrieval.config import RetrievalConfig
from sidecar.retrieval.fusion.pool import S_PER_DAY, Fused, Pool, Ranked, top
from sidecar.retrieval.mirror import LiveMemories
from sidecar.retrieval.stages import VECTOR
from sidecar.retrieval.vector.contract import VectorIndex
from sidecar.timing import now_us


def fuse_with_cosines(
    lists: Sequence[Ranked], vectors: VectorIndex, query: np.ndarray, live: LiveMemories,
    config: RetrievalConfig, limit: int, cosine_column: bool,
) -> tuple[Fused, np.ndarray, np.ndarray]:
    """The top ``limit`` fused candidates, their rows (nan: no row) and query cosines.
    ``cosine_column``: the vector list's scores are the cosines of every candidate (else
    that list's own scores)."""
    ends, weights, column = [0], [], -1
    for i, ranked in enumerate(lists):
        ends.append(ends[-1] + len(ranked.labels))
        weights.append(ranked.weight)
        if ranked.name == VECTOR and cosine_column:
            column = i
    with vectors.locked_rows() as (slot_of, matrix):
        labels, ranks, cosines, scores, order, slots = pool_fusion(
            np.concatenate([r.labels for r in lists]),
            np.concatenate([r.scores for r in lists], dtype=np.float64),
            np.array(ends, np.int64), column, slot_of, matrix, query,
            np.array(weights, np.float64),
            NORMALISATIONS[config.score_normalisation], live.importance, live.updated_at,
            now_us(), config.alpha, config.beta, config.recency_half_life_days * S_PER_DAY)
        fused = top(Pool(labels, ranks), scores, order, limit, live, config.channel_diversity)
        take = slots[fused.picked]
        # Copies, taken before a writer may reuse a slot.
        rows = matrix[take] if len(matrix) else np.zeros((len(take), query.shape[0]),
                                                          np.float32)
    unknown = take < 0
    if unknown.any():
        rows[unknown] = np.nan
    return fused, rows, cosines[fused.picked]
