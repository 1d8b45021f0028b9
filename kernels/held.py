"""Per document of a handful, how many of some terms it holds and its BM25 for weighted
terms, read from the documents' own sorted term ids (a forward index: no posting list).

Layout: document k holds the distinct term ids ``terms[start_k:start_k + sizes[k]]``
(ascending, ``start_k`` the sum of the earlier non-negative sizes) with their counts in
``tfs``; ``sizes[k] < 0``: not indexed. ``wanted`` (ascending, distinct) are the term ids
looked for, each ``counted`` and/or ``scored`` (at ``value``: idf x weight).
"""

from __future__ import annotations

import numpy as np

from kernels.flags import short_kernel


@short_kernel  # microseconds: releasing the GIL would cost more than it runs
def _held_scores(
    terms: np.ndarray, tfs: np.ndarray, sizes: np.ndarray, lengths: np.ndarray,
    wanted: np.ndarray, counted: np.ndarray, scored: np.ndarray, value: np.ndarray,
    k1: float, b: float, avgdl: float, held: np.ndarray, scores: np.ndarray,
) -> None:
    n_wanted = wanted.shape[0]
    start = 0
    for k in range(sizes.shape[0]):
        size = sizes[k]
        if size < 0:
            held[k] = -1
            continue
        # The terms of BM25Index.score_documents, in its order: the same float operations.
        norm = k1 * ((1.0 - b) + b * lengths[k] / avgdl)
        count = 0
        total = 0.0
        j = 0
        for p in range(start, start + size):
            t = terms[p]
            while j < n_wanted and wanted[j] < t:
                j += 1
            if j == n_wanted:
                break
            if wanted[j] == t:
                if counted[j]:
                    count += 1
                if scored[j]:
                    tf = np.float64(tfs[p])
                    total += value[j] * tf * (k1 + 1.0) / (tf + norm)
        start += size
        held[k] = count
        scores[k] = total


def held_scores(
    terms: np.ndarray, tfs: np.ndarray, sizes: np.ndarray, lengths: np.ndarray,
    wanted: np.ndarray, counted: np.ndarray, scored: np.ndarray, value: np.ndarray,
    k1: float, b: float, avgdl: float,
) -> tuple[np.ndarray, np.ndarray]:
    """(held int64, scores float64) per document: the ``counted`` wanted terms it holds (-1:
    not indexed) and the sum over the ``scored`` ones it holds of BM25's contribution
    ``value x tf (k1 + 1) / (tf + k1 (1 - b + b len / avgdl))``, summed in term id order (0:
    none). ``terms`` int64, ``tfs`` float32, ``sizes`` int64, ``lengths`` float64 (one per
    document), ``wanted`` int64 with ``counted``/``scored`` (bool) and ``value`` (float64)."""
    n = sizes.shape[0]
    if not (lengths.shape[0] == n and wanted.shape == counted.shape == scored.shape
            == value.shape and terms.shape == tfs.shape):
        raise ValueError("per-document and per-term arrays must have matching lengths")
    if int(np.maximum(sizes, 0).sum()) != terms.shape[0]:
        raise ValueError("sizes must add up to the terms given")
    if avgdl <= 0.0 and bool(scored.any()):
        raise ValueError("avgdl must be positive to score")
    held = np.zeros(n, np.int64)
    scores = np.zeros(n, np.float64)
    _held_scores(np.asarray(terms, np.int64), np.asarray(tfs, np.float32),
                 np.asarray(sizes, np.int64), np.asarray(lengths, np.float64),
                 np.asarray(wanted, np.int64), np.asarray(counted, np.bool_),
                 np.asarray(scored, np.bool_), np.asarray(value, np.float64), float(k1),
                 float(b), float(avgdl), held, scores)
    return held, scores


def warm_up() -> object:
    """Compile the kernel on a tiny input."""
    return held_scores(
        np.array([1, 4, 2], np.int64), np.array([1.0, 2.0, 1.0], np.float32),
        np.array([2, -1, 1], np.int64), np.array([3.0, 0.0, 1.0]),
        np.array([1, 2], np.int64), np.array([True, False]), np.array([True, True]),
        np.array([0.5, 0.2]), 1.5, 0.75, 2.0)
