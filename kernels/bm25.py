"""BM25 Okapi scoring over one CSR segment of an inverted index.

Layout of a segment: postings of term ``t`` are ``post_doc[term_ptr[t]:term_ptr[t + 1]]``
(document ids, ascending) with their term frequencies in ``post_tf``. Document arrays
(``doc_len``, ``alive``) are indexed by the global document id shared by all segments.
"""

from __future__ import annotations

import numpy as np

from kernels.flags import kernel


@kernel
def _accumulate(
    term_ptr: np.ndarray, post_doc: np.ndarray, post_tf: np.ndarray,
    doc_len: np.ndarray, alive: np.ndarray, terms: np.ndarray, idf: np.ndarray,
    k1: float, b: float, avgdl: float,
    scores: np.ndarray, seen: np.ndarray, touched: np.ndarray, n_touched: int,
) -> int:
    n_terms = term_ptr.shape[0] - 1
    for q in range(terms.shape[0]):
        t = terms[q]
        if t < 0 or t >= n_terms:
            continue
        w = idf[q]
        for p in range(term_ptr[t], term_ptr[t + 1]):
            d = post_doc[p]
            if not alive[d]:
                continue
            tf = post_tf[p]
            scores[d] += w * (tf * (k1 + 1.0) / (tf + k1 * (1.0 - b + b * doc_len[d] / avgdl)))
            if not seen[d]:
                seen[d] = 1
                touched[n_touched] = d
                n_touched += 1
    return n_touched


def bm25_accumulate(
    segment: tuple[np.ndarray, np.ndarray, np.ndarray],
    doc_len: np.ndarray, alive: np.ndarray, terms: np.ndarray, idf: np.ndarray,
    k1: float, b: float, avgdl: float,
    scores: np.ndarray, seen: np.ndarray, touched: np.ndarray, n_touched: int,
) -> int:
    """Add each query term's BM25 contribution to ``scores`` for every live document of the
    segment that contains it; record first-touched documents in ``touched``.

    ``terms`` (int64 term ids, -1 = unknown) and ``idf`` (float64) are parallel, one entry per
    query occurrence. ``scores`` (float64), ``seen`` (uint8) and ``touched`` (int64) are
    buffers sized to the document count, owned by the caller. Returns the new touched count.
    """
    term_ptr, post_doc, post_tf = segment
    if terms.shape != idf.shape:
        raise ValueError("terms and idf must have the same shape")
    if not (scores.shape[0] == seen.shape[0] == touched.shape[0] <= doc_len.shape[0]):
        raise ValueError("scores, seen and touched must have one slot per document")
    if avgdl <= 0.0:
        raise ValueError("avgdl must be positive")
    return int(_accumulate(term_ptr, post_doc, post_tf, doc_len, alive, terms, idf,
                           float(k1), float(b), float(avgdl), scores, seen, touched, n_touched))


def warm_up() -> object:
    """Compile the kernels of this module on a tiny input."""
    ptr = np.array([0, 2, 3], dtype=np.int64)
    docs = np.array([0, 1, 1], dtype=np.int32)
    tf = np.array([1.0, 2.0, 1.0], dtype=np.float32)
    n = 2
    return bm25_accumulate(
        (ptr, docs, tf), np.array([3.0, 4.0]), np.ones(n, np.uint8),
        np.array([0, 1], np.int64), np.array([0.5, 0.2]), 1.5, 0.75, 3.5,
        np.zeros(n), np.zeros(n, np.uint8), np.empty(n, np.int64), 0,
    )
