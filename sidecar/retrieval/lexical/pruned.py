"""Exact top-k BM25 that reads only the postings that can change the top k
(``kernels.maxscore``): the same labels, scores and order (ties included) as scoring every
posting and ranking the accepted documents.

The segments are searched largest first, the best list carried from one to the next (its
k-th exact score is where the next one's pruning starts; a document lives in one segment).
A filter (``Accept``) is asked about the documents a segment's scan touched: the scan stops
once the k-th best partial sum, counting the documents not yet asked about as accepted,
beats what the terms left can add; the filter is then asked about them, and the scan goes on
if the rejected ones were holding the k-th place.

Only where it is exact: a query whose known terms all have a positive idf (a term at idf
<= 0 adds nothing or takes away, and a document it alone touches still ranks), k > 0.
``search_pruned`` returns None otherwise, and the caller scores every posting.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

import numpy as np

from kernels.maxscore import maxscore_step
from sidecar.retrieval.contract import Accept

ACCEPTED, REJECTED = 1, 2
# (term_ptr, post_doc, post_tf) of a segment and its per-term bounds (``kernels.maxscore``).
SegmentBounds = tuple[tuple[np.ndarray, np.ndarray, np.ndarray], np.ndarray]

_local = threading.local()


def search_pruned(
    segments: Sequence[SegmentBounds], doc_len: np.ndarray, alive: np.ndarray,
    doc_label: np.ndarray, n_docs: int, terms: np.ndarray, idf: np.ndarray, k1: float,
    b: float, avgdl: float, k: int, accept: Accept | None,
    buffers: tuple[np.ndarray, np.ndarray, np.ndarray],
) -> tuple[np.ndarray, np.ndarray] | None:
    """The top k accepted (labels, scores) by BM25 of ``terms`` at ``idf``, score descending
    then label ascending, over the ``segments`` (largest first is fastest), or None where it
    would not be exact (a known term's idf not positive, or k <= 0). ``buffers``: (scores,
    seen, touched) of ``n_docs`` slots, zero, left zero."""
    if k <= 0:
        return None
    norm = (k1, k1 * (1.0 - b), k1 * b / avgdl)  # as kernels.bm25._accumulate
    docs = (doc_len, alive, doc_label)
    touched = buffers[2]
    every = (*buffers, _accepted_buffer(n_docs))
    slots = terms.shape[0]
    plan = (np.empty(slots), np.empty(slots, np.int64), np.empty(slots + 1))
    best = (np.empty(k, np.int64), np.empty(k), np.empty(k))
    top = np.empty(1)
    state = np.zeros(4, np.int64)
    for arrays, bounds in segments:
        state[:3] = (-1, 0, 0)
        asked = 0
        try:
            while not maxscore_step(arrays, bounds, docs, terms, idf, norm, plan, state, top,
                                    every, asked, accept is not None, best):
                assert accept is not None
                new = touched[asked:state[2]]
                every[3][new] = np.where(accept(doc_label[new]), ACCEPTED, REJECTED)
                asked = int(state[2])
        except BaseException:
            for buffer in (every[0], every[1], every[3]):
                buffer[touched[:state[2]]] = 0
            raise
        if state[0] == -2:
            return None
    held = int(state[3])
    return best[0][:held], best[1][:held]


def _accepted_buffer(n: int) -> np.ndarray:
    """This thread's filter marks, ``n`` slots, all zero (a view of a larger one)."""
    held: np.ndarray | None = getattr(_local, "accepted", None)
    if held is None or len(held) < n:
        held = np.zeros(max(n, 1024) * 2, np.uint8)
        _local.accepted = held
    return held[:n]
