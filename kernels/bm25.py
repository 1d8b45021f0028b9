"""BM25 Okapi scoring over one CSR segment of an inverted index.

Layout of a segment: postings of term ``t`` are ``post_doc[term_ptr[t]:term_ptr[t + 1]]``
(document ids, ascending) with their term frequencies in ``post_tf``. Document arrays
(``doc_len``, ``alive``) are indexed by the global document id shared by all segments.
"""

from __future__ import annotations

import numpy as np

from kernels.flags import kernel, short_kernel


@kernel
def _accumulate(
    term_ptr: np.ndarray, post_doc: np.ndarray, post_tf: np.ndarray,
    doc_len: np.ndarray, alive: np.ndarray, terms: np.ndarray, idf: np.ndarray,
    k1: float, b: float, avgdl: float,
    scores: np.ndarray, seen: np.ndarray, touched: np.ndarray, n_touched: int,
) -> int:
    n_terms = term_ptr.shape[0] - 1
    # k1 (1 - b + b dl / avgdl) = base + per_len dl: no division per posting.
    base, per_len = k1 * (1.0 - b), k1 * b / avgdl
    for q in range(terms.shape[0]):
        t = terms[q]
        if t < 0 or t >= n_terms:
            continue
        w = idf[q] * (k1 + 1.0)
        for p in range(term_ptr[t], term_ptr[t + 1]):
            d = post_doc[p]
            if not alive[d]:
                continue
            tf = post_tf[p]
            scores[d] += w * tf / (tf + (base + per_len * doc_len[d]))
            if not seen[d]:
                seen[d] = 1
                touched[n_touched] = d
                n_touched += 1
    return n_touched


# The same kernel keeping the GIL, for reads bounded to a few thousand postings (``short``).
_accumulate_short = short_kernel(_accumulate)


def bm25_accumulate(
    segment: tuple[np.ndarray, np.ndarray, np.ndarray],
    doc_len: np.ndarray, alive: np.ndarray, terms: np.ndarray, idf: np.ndarray,
    k1: float, b: float, avgdl: float,
    scores: np.ndarray, seen: np.ndarray, touched: np.ndarray, n_touched: int,
    short: bool = False,
) -> int:
    """Add each query term's BM25 contribution to ``scores`` for every live document of the
    segment that contains it; record first-touched documents in ``touched``. ``short``: the
    GIL is kept (``kernels.flags.short_kernel``), for a read of few postings.

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
    run = _accumulate_short if short else _accumulate
    return int(run(term_ptr, post_doc, post_tf, doc_len, alive, terms, idf, float(k1), float(b),
                   float(avgdl), scores, seen, touched, n_touched))


@kernel
def _insert(best_label: np.ndarray, best_score: np.ndarray, held: int, k: int, label: int,
            score: float) -> int:
    """``label`` at ``score`` into the best list of ``held`` entries (at most ``k``, score
    descending then label ascending): how many it holds after."""
    if k == 0 or held == k and not (score > best_score[k - 1] or (
            score == best_score[k - 1] and label < best_label[k - 1])):
        return held
    j = held if held < k else k - 1  # insertion into the sorted best list
    while j > 0 and (score > best_score[j - 1] or (
            score == best_score[j - 1] and label < best_label[j - 1])):
        if j < k:
            best_score[j], best_label[j] = best_score[j - 1], best_label[j - 1]
        j -= 1
    best_score[j], best_label[j] = score, label
    return min(held + 1, k)


@kernel
def _top_touched(
    scores: np.ndarray, seen: np.ndarray, touched: np.ndarray, n_touched: int,
    doc_label: np.ndarray, k: int,
) -> tuple[np.ndarray, np.ndarray]:
    k = min(k, n_touched)
    best_label = np.empty(k, dtype=np.int64)
    best_score = np.empty(k, dtype=np.float64)
    held = 0
    for i in range(n_touched):
        d = touched[i]
        score, label = scores[d], doc_label[d]
        scores[d] = 0.0
        seen[d] = 0
        held = _insert(best_label, best_score, held, k, label, score)
    return best_label, best_score


@short_kernel  # a few thousand candidates at most: the GIL kept (a sort would let it go)
def _best_of(labels: np.ndarray, scores: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    k = min(k, labels.shape[0])
    best_label = np.empty(k, dtype=np.int64)
    best_score = np.empty(k, dtype=np.float64)
    held = 0
    for i in range(labels.shape[0]):
        held = _insert(best_label, best_score, held, k, labels[i], scores[i])
    return best_label, best_score


def bm25_top_k(
    scores: np.ndarray, seen: np.ndarray, touched: np.ndarray, n_touched: int,
    doc_label: np.ndarray, k: int,
) -> tuple[np.ndarray, np.ndarray]:
    """The k best of the ``n_touched`` documents accumulated by ``bm25_accumulate``: (labels
    int64, scores float64), score descending then label ascending; the buffers are left
    zeroed for the next query. ``doc_label``: each document's label."""
    if not 0 <= n_touched <= touched.shape[0]:
        raise ValueError("n_touched must be within the touched buffer")
    if k < 0:
        raise ValueError("k must be >= 0")
    return _top_touched(scores, seen, touched, int(n_touched), doc_label, int(k))


def best_k(labels: np.ndarray, scores: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The k best of (``labels``, ``scores``): (labels int64, scores float64), score
    descending then label ascending, keeping the GIL (no sort: numpy's sorts release it,
    and a busy thread then keeps it up to its switch interval). For a few thousand."""
    if labels.shape != scores.shape or labels.ndim != 1:
        raise ValueError("labels and scores must be 1-d arrays of the same length")
    if k < 0:
        raise ValueError("k must be >= 0")
    return _best_of(np.asarray(labels, np.int64), np.asarray(scores, np.float64), int(k))


def warm_up() -> object:
    """Compile the kernels of this module on a tiny input (``bm25_accumulate`` both ways)."""
    ptr = np.array([0, 2, 3], dtype=np.int64)
    docs = np.array([0, 1, 1], dtype=np.int32)
    tf = np.array([1.0, 2.0, 1.0], dtype=np.float32)
    n = 2
    best: object = None
    for short in (False, True):
        scores, seen, touched = np.zeros(n), np.zeros(n, np.uint8), np.empty(n, np.int64)
        count = bm25_accumulate(
            (ptr, docs, tf), np.array([3.0, 4.0]), np.ones(n, np.uint8),
            np.array([0, 1], np.int64), np.array([0.5, 0.2]), 1.5, 0.75, 3.5,
            scores, seen, touched, 0, short=short,
        )
        best = bm25_top_k(scores, seen, touched, count, np.array([7, 8], np.int64), 1)
    best_k(np.array([3, 1], np.int64), np.array([0.5, 0.5]), 1)
    return best
