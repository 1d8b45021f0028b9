"""Slow, obviously-correct references for the fast paths (kernels, indexes)."""

from __future__ import annotations

import math

import numpy as np


def bm25_scores(
    docs: list[list[str]], query: list[str], k1: float = 1.5, b: float = 0.75,
    epsilon: float = 0.25,
) -> list[float]:
    """BM25 Okapi written out term by term (rank-bm25's idf floor)."""
    n = len(docs)
    avgdl = sum(len(d) for d in docs) / n
    df: dict[str, int] = {}
    for d in docs:
        for t in set(d):
            df[t] = df.get(t, 0) + 1
    idf = {t: math.log(n - f + 0.5) - math.log(f + 0.5) for t, f in df.items()}
    mean = sum(idf.values()) / len(idf)
    idf = {t: (epsilon * mean if v < 0 else v) for t, v in idf.items()}
    out = []
    for d in docs:
        s = 0.0
        for q in query:
            tf = d.count(q)
            s += idf.get(q, 0.0) * tf * (k1 + 1) / (tf + k1 * (1 - b + b * len(d) / avgdl))
        out.append(s)
    return out


def rrf(
    ranks: np.ndarray, weights: np.ndarray, k: float, importance: np.ndarray,
    age_s: np.ndarray, alpha: float, beta: float, half_life_s: float, labels: np.ndarray,
) -> tuple[list[float], list[int]]:
    scores = []
    for i in range(len(labels)):
        s = sum(weights[j] / (k + ranks[i][j]) for j in range(len(weights)) if ranks[i][j] > 0)
        s += alpha * importance[i] + beta * 0.5 ** (max(age_s[i], 0.0) / half_life_s)
        scores.append(s)
    order = sorted(range(len(labels)), key=lambda i: (-scores[i], labels[i]))
    return scores, order
