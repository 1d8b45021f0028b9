"""What a conversation's reply vote reads of a ``BM25Index`` without analysing any text again
and without scanning every posting of a term.

- ``terms_held``: how many of a set of query terms each document's indexed text holds (the
  index keeps each document's distinct term ids; a query term is never a stop word, so this
  is the count a ``query_terms`` analysis of the text would give).
- ``rare_search``: ``BM25Index.search_weighted`` of the query's rarest terms, taken while
  their document frequencies add up to at most a budget: the postings it reads are bounded
  by the budget whatever the size of the store (a term in more documents than the budget
  allows, low in idf, is left out). With every term within the budget it is
  ``search_weighted``.

Both read the index's arrays under its lock, as its own readers do.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

import numpy as np

from sidecar.retrieval.contract import Accept
from sidecar.retrieval.lexical.bm25 import MAX_CONTEXT_TERMS, BM25Index, accepted, top_k

NOTHING = (np.zeros(0, np.int64), np.zeros(0, np.float64))


def terms_held(index: BM25Index, labels: Sequence[int], terms: Collection[str]) -> np.ndarray:
    """Per label, how many of ``terms`` (distinct, no stop word) its document holds; -1 for
    a label not indexed."""
    with index._lock:
        wanted = np.array(sorted({i for i in map(index._vocab.get, terms) if i is not None}),
                          np.int64)
        entries = [None if d is None else index._doc_terms[d]
                   for d in map(index._label_doc.get, labels)]
    out = np.array([-1 if e is None else 0 for e in entries], np.int64)
    rows = [(k, e[0]) for k, e in enumerate(entries) if e is not None]
    if not rows or not len(wanted):
        return out
    held = np.concatenate([ids for _, ids in rows])  # each document's ids: distinct, sorted
    owner = np.repeat(np.array([k for k, _ in rows], np.int64), [len(ids) for _, ids in rows])
    at = np.minimum(np.searchsorted(wanted, held), len(wanted) - 1)
    np.add.at(out, owner[wanted[at] == held], 1)
    return out


def rare_search(index: BM25Index, weights: dict[str, float], k: int, budget: int,
                accept: Accept | None = None,
                groups: Collection[int] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """``BM25Index.search_weighted`` of the ``weights`` terms (the ``MAX_CONTEXT_TERMS`` of
    highest idf x weight) whose document frequencies, taken rarest first, add up to at most
    ``budget``: top-k accepted labels by BM25 of those terms, descending, ties by label
    ascending (the same sums, term by term, as ``search_weighted``'s)."""
    if not weights or k <= 0:
        return NOTHING
    with index._lock:  # statistics and segments from the same instant
        stats = index._stats_locked(groups)
        ids, idf = index._idf_locked(list(weights), stats)
        value = idf * np.fromiter(weights.values(), np.float64, len(weights))
        best = np.argsort(-value, kind="stable")[:MAX_CONTEXT_TERMS]
        ids, value = ids[best], value[best]
        df = index._df[np.maximum(ids, 0)].tolist()
        snap = index._view(stats)
    known = [at for at, i in enumerate(ids.tolist()) if i >= 0]
    total, read = 0, []
    for at in sorted(known, key=df.__getitem__):  # rarest first (ties: the search's order)
        total += df[at]
        if total > budget:
            break
        read.append(at)
    if not read:
        return NOTHING
    read.sort()  # the search's order: the same sums
    return top_k(*accepted(index._collect(index._summed(snap, ids[read], value[read])),
                           accept), k)
