"""Exact top-k BM25 that reads only the postings that can change the top k
(``kernels.maxscore``): the same labels, scores and order (ties included) as scoring every
posting and ranking the documents.

The segments are searched largest first, the best list carried from one to the next (its
k-th exact score is where the next one's pruning starts; a document lives in one segment).

A scope filter is applied by the kernel from the columns it reads (``LiveMemories.visibility``,
which ``LexicalSource`` passes beside ``accept``): a document they do not offer never counts
toward the k-th best nor ranks. A filter given only as a function (``Accept``) would have to
be asked from Python during the search, which cost more than pruning saved (decision 0043):
then every posting is scored.

Only where it is exact and pays: 0 < k <= ``MAX_K``, every known term of the query at a
positive idf (a term at idf <= 0 adds nothing or takes away, and a document it alone touches
still ranks), and a filter, if any, given with its columns. ``search_pruned`` returns None
otherwise, and the caller scores every posting.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

import numpy as np

from kernels.maxscore import maxscore_search
from sidecar.retrieval.contract import Accept
from sidecar.retrieval.mirror import Visibility

# (term_ptr, post_doc, post_tf) of a segment and its per-term bounds (``kernels.maxscore``).
SegmentBounds = tuple[tuple[np.ndarray, np.ndarray, np.ndarray], np.ndarray]

# Largest k pruned: the k-th best partial sum rises more slowly with k, fewer postings are
# skipped and more candidates scored exactly (0043, ``bench/lexical_pruned.py`` at 10k
# LongMemEval turns, unfiltered, warm: ~0.6x the time of scoring every posting at k 10, 0.75x
# at 20, 0.85x at 30, 0.9x at 40, 1.0x at 50).
MAX_K = 32

_local = threading.local()


def search_pruned(
    segments: Sequence[SegmentBounds], doc_len: np.ndarray, alive: np.ndarray,
    doc_label: np.ndarray, n_docs: int, terms: np.ndarray, idf: np.ndarray, k1: float,
    b: float, avgdl: float, k: int, accept: Accept | None,
    buffers: tuple[np.ndarray, np.ndarray, np.ndarray], visibility: Visibility | None = None,
) -> tuple[np.ndarray, np.ndarray] | None:
    """The top k accepted (labels, scores) by BM25 of ``terms`` at ``idf``, score descending
    then label ascending, over the ``segments`` (largest first is fastest), or None where it
    would not be exact or is not used (see the module). ``visibility``: the columns
    ``accept`` reads. ``buffers``: (scores, seen, touched) of ``n_docs`` slots, scores and
    seen zero, left zero."""
    if not 0 < k <= MAX_K or (accept is not None and visibility is None):
        return None
    columns = None if accept is None else visibility
    norm = (k1, k1 * (1.0 - b), k1 * b / avgdl)  # as kernels.bm25._accumulate
    docs = (doc_len, alive, doc_label)
    every = (*buffers, _candidates(n_docs))
    slots = terms.shape[0]
    plan = (np.empty(slots), np.empty(slots, np.int64), np.empty(slots + 1))
    best = (np.empty(k, np.int64), np.empty(k), np.empty(k))
    held = 0
    for arrays, bounds in segments:
        held = maxscore_search(arrays, bounds, docs, terms, idf, norm, plan, every, best, held,
                               columns)
        if held < 0:  # decided on the first segment, before anything was touched
            return None
    return best[0][:held], best[1][:held]


def _candidates(n: int) -> np.ndarray:
    """This thread's candidate list, ``n`` slots (a view of a larger one)."""
    held: np.ndarray | None = getattr(_local, "candidates", None)
    if held is None or len(held) < n:
        held = np.empty(max(n, 1024) * 2, np.int64)
        _local.candidates = held
    return held[:n]
