"""Retrieval metrics for LongMemEval at turn and session level."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True, slots=True)
class Scores:
    """Means over questions. recall@k = share of the evidence found in the top k; MRR = 1 /
    rank of the first evidence item (0 when none in the list)."""

    r5: float
    r10: float
    mrr: float
    hit5: float
    n: int


def _one(ranked: Sequence[str], relevant: set[str]) -> tuple[float, float, float, float]:
    first = next((i + 1 for i, x in enumerate(ranked) if x in relevant), 0)
    r5 = len(relevant & set(ranked[:5])) / len(relevant)
    r10 = len(relevant & set(ranked[:10])) / len(relevant)
    return r5, r10, (1.0 / first if first else 0.0), float(0 < first <= 5)


def turn_level(ranked: Sequence[str], evidence: set[str]) -> tuple[float, ...] | None:
    """Evidence = the has_answer turns present in the store (None: the question has none)."""
    return _one(ranked, evidence) if evidence else None


def session_level(ranked: Sequence[str], evidence: set[str]) -> tuple[float, ...]:
    """Sessions ranked by their first turn in the list; recall@k over the sessions of the top
    k turns (the sessions a k-memory injection would surface)."""
    sessions = [t.split("#", 1)[0] for t in ranked]
    r5 = len(evidence & set(sessions[:5])) / len(evidence)
    r10 = len(evidence & set(sessions[:10])) / len(evidence)
    distinct = list(dict.fromkeys(sessions))
    first = next((i + 1 for i, s in enumerate(distinct) if s in evidence), 0)
    return r5, r10, (1.0 / first if first else 0.0), float(bool(evidence & set(sessions[:5])))


def mean(rows: list[tuple[float, ...] | None]) -> Scores:
    kept = np.array([r for r in rows if r is not None], float).reshape(-1, 4)
    if not len(kept):
        return Scores(0.0, 0.0, 0.0, 0.0, 0)
    m = kept.mean(axis=0)
    return Scores(float(m[0]), float(m[1]), float(m[2]), float(m[3]), len(kept))
