"""What a conversation's reply vote reads of a ``BM25Index`` without analysing any text again
and without scanning every posting of a term.

- ``terms_held``: how many of a set of query terms each document's indexed text holds (the
  index keeps each document's distinct term ids; a query term is never a stop word, so this
  is the count a ``query_terms`` analysis of the text would give). The reference of
  ``held_scores``' counts.
- ``held_scores``: ``terms_held`` and ``BM25Index.score_documents`` of the same documents in
  one pass over their term ids (a kernel: ``kernels.held``), what a reply's vote asks of the
  memories it looks at.
- ``rare_search``: ``BM25Index.search_weighted`` of the query's rarest terms, taken while
  their document frequencies add up to at most a budget: the postings it reads are bounded
  by the budget whatever the size of the store (a term in more documents than the budget
  allows, low in idf, is left out). With every term within the budget it is
  ``search_weighted``.

They read the index's arrays under its lock, as its own readers do.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass

import numpy as np

from kernels.bm25 import best_k
from kernels.held import held_scores as held_scores_kernel
from sidecar.retrieval.contract import Accept
from sidecar.retrieval.lexical.bm25 import MAX_CONTEXT_TERMS, BM25Index, accepted
from sidecar.retrieval.lexical.groups import Stats

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


def held_scores(index: BM25Index, labels: Sequence[int], terms: Collection[str],
                weights: dict[str, float], groups: Collection[int] | None = None,
                ) -> tuple[np.ndarray, np.ndarray]:
    """``terms_held(index, labels, terms)`` and ``index.score_documents(labels, weights,
    groups)``, the same values, from one read of the documents' term ids. What is looked for
    (``Looked``) is worked out once per set of statistics: a reply's vote asks for the
    memories in view, then for those a wide search found, with the same terms."""
    with index._lock:
        looked = _looked(index, terms, weights, groups)
        docs = list(map(index._label_doc.get, labels))
        entries = [None if d is None else index._doc_terms[d] for d in docs]
        lengths = index._doc_len[[-1 if d is None else d for d in docs]]
    present = [e for e in entries if e is not None]
    if len(present) < len(entries):
        lengths = np.where([e is None for e in entries], 0.0, lengths)
    return held_scores_kernel(
        np.concatenate([e[0] for e in present]) if present else np.zeros(0, np.int64),
        np.concatenate([e[1] for e in present]) if present else np.zeros(0, np.float32),
        np.array([-1 if e is None else len(e[0]) for e in entries], np.int64), lengths,
        looked.wanted, looked.counted, looked.scored, looked.value, index.k1, index.b,
        looked.avgdl)


@dataclass(frozen=True, slots=True)
class Looked:
    """What ``held_scores`` looks for in each document: term ids ascending, each one counted
    (one of the ``terms``) and/or scored (one of the ``weights``, at ``value``: idf x
    weight), and the average document length it scores with."""

    wanted: np.ndarray
    counted: np.ndarray
    scored: np.ndarray
    value: np.ndarray
    avgdl: float


# Sets of terms and statistics whose ``Looked`` is kept (all dropped when more are asked).
MAX_LOOKED = 64


def _looked(index: BM25Index, terms: Collection[str], weights: dict[str, float],
            groups: Collection[int] | None) -> Looked:
    """``looked_up`` of ``terms`` and ``weights``, remembered while the index's documents
    stay the same (its ``version``, which every change of them bumps, and its compaction
    ``epoch`` are part of the key). Under the index's lock."""
    stats = index._stats_locked(groups)
    key = (index._version, index._epoch, stats.groups, frozenset(terms),
           tuple(weights.items()))
    memo = index._looked
    found: Looked | None = memo.get(key)
    if found is None:
        if len(memo) >= MAX_LOOKED:
            memo.clear()
        found = memo[key] = looked_up(index, terms, weights, stats)
    return found


def looked_up(index: BM25Index, terms: Collection[str], weights: dict[str, float],
              stats: Stats) -> Looked:
    """What ``held_scores`` looks for, worked out (the reference of ``_looked``)."""
    ids, idf = index._idf_locked(list(weights), stats)
    counted = {i for i in map(index._vocab.get, terms) if i is not None}
    scoring = stats.n > 0 and stats.total_len > 0
    look: dict[int, tuple[bool, bool, float]] = {i: (True, False, 0.0) for i in counted}
    if scoring:
        for i, v in zip(ids.tolist(), (idf * np.fromiter(weights.values(), np.float64,
                                                         len(weights))).tolist(), strict=True):
            if i >= 0:
                look[i] = (i in counted, True, v)
    wanted = sorted(look)
    return Looked(np.array(wanted, np.int64), np.array([look[i][0] for i in wanted], bool),
                  np.array([look[i][1] for i in wanted], bool),
                  np.array([look[i][2] for i in wanted], np.float64),
                  stats.avgdl if scoring else 1.0)


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
        snap = index._view(stats)
        df = index._df
        # a handful of terms: in Python (the same float products as numpy's)
        value = [a * float(w) for a, w in zip(idf.tolist(), weights.values(), strict=True)]
        listed = ids.tolist()
        best = sorted(range(len(value)), key=lambda i: -value[i])[:MAX_CONTEXT_TERMS]
        known = [(at, int(df[listed[i]])) for at, i in enumerate(best) if listed[i] >= 0]
    total, read = 0, []
    for at, count in sorted(known, key=lambda x: x[1]):  # rarest first (ties: the search's)
        total += count
        if total > budget:
            break
        read.append(at)
    if not read:
        return NOTHING
    read.sort()  # the search's order: the same sums
    terms = np.array([listed[best[at]] for at in read], np.int64)
    values = np.array([value[best[at]] for at in read], np.float64)
    # at most ``budget`` postings, summed and ranked keeping the GIL (released, a busy thread
    # keeps it up to its switch interval)
    return best_k(*accepted(index._collect(index._summed(snap, terms, values, short=True)),
                            accept), k)
