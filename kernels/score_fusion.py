"""Normalised score fusion (a convex combination of per-query normalised source scores) with
the importance / recency tie-break boost of ``kernels.rrf``.

Each source s scores some of the n candidates (``present[i, s]``). Its scores are normalised
over the candidates it scored, per query:

- max: ``x / max`` (a fraction of the source's best score; for scores >= 0 in [0, 1]);
- min-max: ``(x - min) / (max - min)``, in [0, 1];
- z-score: ``(x - mean) / std`` (population std).

A candidate the source did not score gets 0 under max, else the source's worst normalised
value (0 under min-max); a source whose scored candidates all score alike gives them 1 and
the others 0, and under max a source whose best score is <= 0 adds nothing.
Then

    score(i) = sum_s w_s * norm_s(i) + alpha * importance(i) + beta * 0.5 ** (age(i) / half_life)

and candidates are ordered by score descending, then label ascending.
"""

from __future__ import annotations

import numpy as np

from kernels.flags import kernel
from kernels.rrf import boost_and_order, candidate_arrays

MAX = 0
MINMAX = 1
ZSCORE = 2
NORMALISATIONS = {"max": MAX, "minmax": MINMAX, "zscore": ZSCORE}


@kernel
def _normalised(values: np.ndarray, present: np.ndarray, norm: int) -> np.ndarray:
    """One source's column normalised (absent candidates: the worst normalised value)."""
    n = len(values)
    out = np.zeros(n, dtype=np.float64)
    count, lo, hi, total = 0, np.inf, -np.inf, 0.0
    for i in range(n):
        if present[i]:
            count += 1
            lo, hi, total = min(lo, values[i]), max(hi, values[i]), total + values[i]
    if count == 0 or (norm == MAX and hi <= 0.0):
        return out
    if norm == MAX:
        for i in range(n):
            out[i] = values[i] / hi if present[i] else 0.0
        return out
    if hi - lo <= 0.0:  # one candidate, or all alike: they are the source's best
        for i in range(n):
            out[i] = 1.0 if present[i] else 0.0
        return out
    centre, spread = lo, hi - lo
    if norm == ZSCORE:
        centre = total / count
        squares = 0.0
        for i in range(n):
            if present[i]:
                squares += (values[i] - centre) ** 2
        spread = np.sqrt(squares / count)
    floor = (lo - centre) / spread
    for i in range(n):
        out[i] = (values[i] - centre) / spread if present[i] else floor
    return out


@kernel
def _fuse_scores(
    values: np.ndarray, present: np.ndarray, weights: np.ndarray, norm: int,
    importance: np.ndarray, age_s: np.ndarray, alpha: float, beta: float, half_life_s: float,
    labels: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    n, sources = values.shape
    scores = np.zeros(n, dtype=np.float64)
    for s in range(sources):
        if weights[s] != 0.0:
            scores += weights[s] * _normalised(values[:, s], present[:, s], norm)
    return scores, boost_and_order(scores, importance, age_s, alpha, beta, half_life_s, labels)


def fuse_scores(
    values: np.ndarray, present: np.ndarray, weights: np.ndarray, normalisation: str,
    importance: np.ndarray, age_s: np.ndarray, alpha: float, beta: float, half_life_s: float,
    labels: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """Fused scores of n candidates and their order (best first).

    ``values``: (n, sources) each source's raw score of each candidate, read where
    ``present`` (same shape, bool) is true; ``weights``: (sources,); ``normalisation``: a key
    of ``NORMALISATIONS``; ``importance``, ``age_s`` (seconds since last update), ``labels``:
    (n,).
    """
    values = np.ascontiguousarray(values, dtype=np.float64)
    if values.ndim != 2:
        raise ValueError("values must be a 2-D (candidates, sources) array")
    n, sources = values.shape
    present = np.ascontiguousarray(present, dtype=np.bool_)
    if present.shape != values.shape:
        raise ValueError("present must have the shape of values")
    weights = np.ascontiguousarray(weights, dtype=np.float64)
    if weights.shape != (sources,):
        raise ValueError(f"weights must have one entry per source ({sources})")
    if normalisation not in NORMALISATIONS:
        raise ValueError(f"normalisation must be one of {sorted(NORMALISATIONS)}")
    if not np.isfinite(values[present]).all():
        raise ValueError("present values must be finite")
    importance, age_s, labels = candidate_arrays(n, importance, age_s, labels, half_life_s)
    return _fuse_scores(values, present, weights, NORMALISATIONS[normalisation], importance,
                        age_s, float(alpha), float(beta), float(half_life_s), labels)


def warm_up() -> object:
    """Compile the kernels of this module on a tiny input."""
    values = np.array([[0.5, 2.0], [0.1, 0.0]])
    present = np.array([[True, True], [True, False]])
    for name in NORMALISATIONS:
        fuse_scores(values, present, np.ones(2), name, np.ones(2), np.zeros(2), 0.005, 0.005,
                    86400.0, np.arange(2))
    return None
