"""BM25 Okapi lexical index: a CSR inverted index in segments, scored by a Numba kernel.

Scores equal ``rank_bm25.BM25Okapi`` over the live documents (same k1, b, epsilon: negative
idf floored at ``epsilon * mean idf`` of the vocabulary), computed without a rebuild.

Writes: ``add`` (insert or replace by label) tokenises the documents, updates document
frequencies and appends a small segment; ``remove`` clears a document's ``alive`` flag and its
statistics at once, so a forgotten or replaced text never scores again. Segments merge
logarithmically (the last two merge while the older is at most ``merge_ratio`` times the
newer); the tail folds into the main segment in a background thread once it holds more than
``1/tail_fraction`` of the documents. Readers take a view (the current arrays) under a short
lock and score without it (the kernel releases the GIL).

Labels are memory ``seq`` ints; internal document ids are never reused.
"""

from __future__ import annotations

import functools
import logging
import threading
from collections.abc import Collection, Hashable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from kernels.bm25 import bm25_accumulate, bm25_top_k
from sidecar.retrieval.contract import Accept, Weighted
from sidecar.retrieval.lexical.groups import GroupStats, Stats
from sidecar.retrieval.lexical.idf import IdfMemo
from sidecar.retrieval.lexical.pruned import SegmentBounds, search_pruned
from sidecar.retrieval.lexical.query import rarest
from sidecar.retrieval.lexical.tokenize import PLAIN, STOP_WORDS, Analyzer
from sidecar.retrieval.mirror import Visibility

log = logging.getLogger(__name__)

_EMPTY = (np.zeros(0, np.int64), np.zeros(0, np.float64))
# Term ids whose idf ``_idf_fresh`` computes in Python floats; more go to numpy (``_idf_of``).
# Both cost ~25 us at 45 terms here (warm, thread time); 10 terms: 11-17 us against 32.
FEW = 32
# Context terms (``scores``' ``context``) looked up per query at most: the highest idf x weight.
MAX_CONTEXT_TERMS = 32
# Segments of fewer document ids keep no per-term bounds (``Segment.bounds``).
BOUNDS_MIN_DOCS = 256
_NO_BOUNDS = np.zeros((0, 2))


@dataclass(frozen=True, slots=True)
class Segment:
    lo: int  # document id range [lo, hi)
    hi: int
    term_ptr: np.ndarray  # int64, vocabulary size at build + 1
    post_doc: np.ndarray  # int32
    post_tf: np.ndarray  # float32
    # Per term (max tf, min doc length / tf) over its postings, 0 until a query needs them
    # (``kernels.maxscore``): made on the first pruned search, shared by later ones.
    _bounds: list[np.ndarray] = field(default_factory=list, compare=False, repr=False)

    @property
    def arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        return self.term_ptr, self.post_doc, self.post_tf

    def bounds(self) -> np.ndarray:
        """The per-term figures, or none (0 rows) for a segment of fewer than
        ``BOUNDS_MIN_DOCS`` ids: a write's small segment would pay a row per term of the
        vocabulary for a few postings, cheaper to read again per query."""
        if self.hi - self.lo < BOUNDS_MIN_DOCS:
            return _NO_BOUNDS
        if not self._bounds:  # two threads racing each make one: the first kept is used
            self._bounds.append(np.zeros((len(self.term_ptr) - 1, 2)))
        return self._bounds[0]


@dataclass(frozen=True, slots=True)
class Postings:
    """Tokenised live documents: what ``BM25Index`` needs to rebuild without tokenising.

    Document i (label ``labels[i]``, ``lengths[i]`` tokens) holds the distinct term ids
    ``term_ids[offsets[i]:offsets[i + 1]]`` (indexes into ``terms``) with their counts ``tfs``.
    """

    terms: list[str]
    analyser: str  # Analyzer.name of the index that made them
    labels: np.ndarray  # int64
    lengths: np.ndarray  # int64
    offsets: np.ndarray  # int64, len(labels) + 1
    term_ids: np.ndarray  # int32
    tfs: np.ndarray  # float32


@dataclass(frozen=True, slots=True)
class _View:
    segments: tuple[Segment, ...]
    doc_len: np.ndarray
    alive: np.ndarray
    doc_label: np.ndarray
    n_docs: int
    n_live: int
    avgdl: float


class BM25Index:
    def __init__(
        self, k1: float = 1.5, b: float = 0.75, epsilon: float = 0.25, *,
        merge_ratio: int = 4, tail_fraction: int = 8, min_main_merge: int = 2048,
        background_merge: bool = True, analyzer: Analyzer = PLAIN,
    ) -> None:
        self.k1, self.b, self.epsilon = k1, b, epsilon
        self.analyzer = analyzer
        self.merge_ratio, self.tail_fraction = merge_ratio, tail_fraction
        self.min_main_merge, self.background_merge = min_main_merge, background_merge
        self._lock = threading.RLock()
        self._version = 0
        self._epoch = 0  # bumped by ``compact``: document ids from before mean nothing
        self._empty()
        self._merging: threading.Thread | None = None
        self._merging_hi = 0  # the documents below this are being folded into the main one
        self._local = threading.local()

    def _empty(self) -> None:
        """No document, no term: new arrays (a reader's view of the old ones stays valid)."""
        self._vocab: dict[str, int] = {}
        self._df = np.zeros(1024, np.int64)
        self._stop = np.zeros(1024, bool)
        self._doc_len = np.zeros(1024, np.float64)
        self._alive = np.zeros(1024, np.uint8)
        self._doc_label = np.full(1024, -1, np.int64)
        self._doc_group = np.zeros(1024, np.int32)
        self._groups = GroupStats()  # per group (scope) of documents: see ``groups``
        self._doc_terms: list[tuple[np.ndarray, np.ndarray] | None] = []
        self._label_doc: dict[int, int] = {}
        self._segments: tuple[Segment, ...] = ()
        self._total_len = 0.0
        self._mean_idf: tuple[int, float] = (-1, 0.0)
        self._idf_memo = IdfMemo()  # term ids change with the vocabulary
        self._looked: dict[Hashable, Any] = {}  # ``lexical.held``'s memo, under the lock

    def __len__(self) -> int:
        return len(self._label_doc)

    @property
    def version(self) -> int:
        """Bumped by every change of the documents."""
        return self._version

    @property
    def segment_count(self) -> int:
        return len(self._segments)

    # --- writes -------------------------------------------------------------------------

    def add(self, labels: Sequence[int], texts: Sequence[str], *, bulk: bool = False,
            groups: Sequence[int] | None = None,
            terms: Sequence[list[str]] | None = None) -> None:
        """Insert documents, replacing any with the same label (the last of a batch wins).

        ``bulk``: statistics only, no segment yet; the documents become searchable at the
        next ``merge()`` (one CSR build for a whole load instead of one per batch).
        ``groups``: each document's group (a scope; 0 without), whose statistics a query
        given ``groups`` scores with. ``terms``: each text's ``analyzer.terms``, when the
        caller analysed them already (outside any lock).
        """
        if len(labels) != len(texts) or (groups is not None and len(groups) != len(labels)) \
                or (terms is not None and len(terms) != len(labels)):
            raise ValueError("labels, texts, groups and terms must have the same length")
        kinds = groups if groups is not None else [0] * len(labels)
        analysed = terms if terms is not None else [None] * len(labels)
        latest = dict(zip((int(x) for x in labels),
                          zip(texts, kinds, analysed, strict=True), strict=True))
        if not latest:
            return
        tokenized = [self.analyzer.terms(t) if a is None else a for t, _, a in latest.values()]
        with self._lock:
            self._remove_locked(list(latest))
            lo = len(self._doc_terms)
            self._add_docs(list(latest), tokenized, [int(g) for _, g, _ in latest.values()])
            self._version += 1
            if bulk:
                return
            self._segments = (*self._segments, self._build(lo, len(self._doc_terms)))
            self._merge_tail_locked()
        self._maybe_merge_main()

    def remove(self, labels: Sequence[int]) -> None:
        with self._lock:
            if self._remove_locked([int(x) for x in labels]):
                self._version += 1

    def _add_docs(self, labels: list[int], tokenized: list[list[str]],
                  groups: list[int]) -> None:
        """Append documents, vectorised over the batch: (doc, term) pairs counted at once."""
        flat = [t for tokens in tokenized for t in tokens]
        for term in dict.fromkeys(flat):
            if term not in self._vocab:
                self._term_id(term)
        ids = np.fromiter(map(self._vocab.__getitem__, flat), np.int64, len(flat))
        lengths = np.array([len(tokens) for tokens in tokenized], np.int64)
        first = len(self._doc_terms)
        docs = np.repeat(np.arange(len(labels), dtype=np.int64), lengths)
        pairs, tfs = np.unique(docs * (len(self._vocab) + 1) + ids, return_counts=True)
        pair_doc, pair_term = np.divmod(pairs, len(self._vocab) + 1)
        np.add.at(self._df, pair_term, 1)
        # Each document's slice of the pairs (views, as np.split would give, without its
        # per-piece cost).
        ends = np.searchsorted(pair_doc, np.arange(1, len(labels) + 1)).tolist()
        counts = tfs.astype(np.float32)
        end = first + len(labels)
        self._grow_docs(end)
        start = 0
        for stop in ends:
            self._doc_terms.append((pair_term[start:stop], counts[start:stop]))
            start = stop
        self._doc_len[first:end] = lengths
        self._doc_label[first:end] = labels
        self._doc_group[first:end] = groups
        self._groups.added_batch(groups, pair_doc, pair_term, lengths)
        self._alive[first:end] = 1
        self._label_doc.update(zip(labels, range(first, end), strict=True))
        self._total_len += float(lengths.sum())

    def _remove_locked(self, labels: list[int]) -> int:
        removed = 0
        for label in labels:
            doc = self._label_doc.pop(label, None)
            if doc is None:
                continue
            entry = self._doc_terms[doc]
            assert entry is not None
            self._df[entry[0]] -= 1
            self._groups.removed(int(self._doc_group[doc]), entry[0], float(self._doc_len[doc]))
            self._alive[doc] = 0
            self._total_len -= self._doc_len[doc]
            self._doc_terms[doc] = None
            removed += 1
        return removed

    def _term_id(self, term: str) -> int:
        tid = self._vocab.get(term)
        if tid is None:
            tid = len(self._vocab)
            self._vocab[term] = tid
            if tid >= len(self._df):
                self._df = np.concatenate([self._df, np.zeros(len(self._df), np.int64)])
                self._stop = np.concatenate([self._stop, np.zeros(len(self._stop), bool)])
            self._stop[tid] = term in STOP_WORDS
        return tid

    def _grow_docs(self, needed: int) -> None:
        size = len(self._alive)
        if needed <= size:
            return
        extra = max(size, needed - size)
        # New arrays (never resized in place): a reader's view stays valid.
        self._doc_len = np.concatenate([self._doc_len, np.zeros(extra, np.float64)])
        self._alive = np.concatenate([self._alive, np.zeros(extra, np.uint8)])
        self._doc_label = np.concatenate([self._doc_label, np.full(extra, -1, np.int64)])
        self._doc_group = np.concatenate([self._doc_group, np.zeros(extra, np.int32)])

    # --- saved postings (lexical.persist) --------------------------------------------------

    def export(self, groups: Collection[int] | None = None) -> Postings:
        """The live documents' tokenised postings (of ``groups`` only when given), in
        document order (a snapshot)."""
        with self._lock:
            docs = [d for d in range(len(self._doc_terms)) if self._doc_terms[d] is not None
                    and (groups is None or int(self._doc_group[d]) in groups)]
            entries = [self._doc_terms[d] for d in docs]
            terms = list(self._vocab)
            labels = self._doc_label[docs].copy()
            lengths = self._doc_len[docs].astype(np.int64)
        sizes = np.array([len(e[0]) for e in entries if e is not None], np.int64)
        offsets = np.zeros(len(entries) + 1, np.int64)
        np.cumsum(sizes, out=offsets[1:])
        flat = [e for e in entries if e is not None]
        ids = np.concatenate([e[0] for e in flat]) if flat else np.zeros(0, np.int64)
        # Only the terms a live document holds: a removed (erased) text's words stay out.
        used = np.unique(ids)
        return Postings(
            terms=[terms[t] for t in used.tolist()], analyser=self.analyzer.name,
            labels=labels, lengths=lengths, offsets=offsets,
            term_ids=np.searchsorted(used, ids).astype(np.int32),
            tfs=np.concatenate([e[1] for e in flat]) if flat else np.zeros(0, np.float32))

    def restore(self, postings: Postings, groups: np.ndarray | None = None) -> None:
        """Load ``postings`` into an empty index (as ``add(..., bulk=True)`` would have), then
        build the segment. ``groups``: each document's group (as ``add``)."""
        with self._lock:
            self._restore_locked(postings, groups)
        self.merge()

    def compact(self) -> bool:
        """Renumber the documents when removed ones hold most of the ids (scopes evicted
        leave theirs): the per-id arrays and the vocabulary shrink to the live documents.
        True when it did. Scores do not change."""
        self.wait_for_merge()
        with self._lock:
            live = len(self._label_doc)
            if len(self._doc_terms) - live < max(self.min_main_merge, live):
                return False
            postings = self.export()
            docs = [self._label_doc[label] for label in postings.labels.tolist()]
            groups = self._doc_group[docs].copy()
            self._empty()
            self._epoch += 1
            self._restore_locked(postings, groups)
            if self._doc_terms:
                self._segments = (self._build(0, len(self._doc_terms)),)
        return True

    def _restore_locked(self, postings: Postings, groups: np.ndarray | None) -> None:
        if self._doc_terms:
            raise ValueError("restore needs an empty index")
        if postings.analyser != self.analyzer.name:
            raise ValueError(f"postings of analyser {postings.analyser!r}, index uses "
                             f"{self.analyzer.name!r}")
        for term in postings.terms:
            self._term_id(term)
        ids = postings.term_ids.astype(np.int64)
        np.add.at(self._df, ids, 1)
        n = len(postings.labels)
        self._version += 1
        if n == 0:  # np.split below would make one empty document of nothing
            return
        self._grow_docs(n)
        bounds = postings.offsets[1:-1]
        self._doc_terms = list(zip(np.split(ids, bounds), np.split(postings.tfs, bounds),
                                   strict=True))
        self._doc_len[:n] = postings.lengths
        self._doc_label[:n] = postings.labels
        if groups is not None:
            self._doc_group[:n] = groups
        for doc, entry in enumerate(self._doc_terms):
            assert entry is not None
            self._groups.added(int(self._doc_group[doc]), entry[0],
                               float(postings.lengths[doc]))
        self._alive[:n] = 1
        self._label_doc = dict(zip(postings.labels.tolist(), range(n), strict=True))
        self._total_len = float(postings.lengths.sum())

    # --- segments -----------------------------------------------------------------------

    def _build(self, lo: int, hi: int) -> Segment:
        return _build_from(self._doc_terms, lo, hi, len(self._vocab), self._stop)

    def _merge_tail_locked(self) -> None:
        segs = list(self._segments)
        while len(segs) >= 3 and _size(segs[-2]) <= self.merge_ratio * _size(segs[-1]):
            if segs[-2].lo < self._merging_hi < segs[-1].hi:
                break  # one a main merge in progress folds, one after it: kept apart
            last, prev = segs.pop(), segs.pop()
            # From their postings: array operations, not a pass over each document.
            segs.append(_fold((prev, last), len(self._vocab), self._alive))
        self._segments = tuple(segs)

    def _maybe_merge_main(self) -> None:
        with self._lock:
            segs = self._segments
            if len(segs) < 2 or (self._merging is not None and self._merging.is_alive()):
                return
            tail = segs[-1].hi - segs[0].hi
            if tail < max(self.min_main_merge, _size(segs[0]) // self.tail_fraction):
                return
            hi = segs[-1].hi
            if not self.background_merge:
                self._merge_upto(hi)
                return
            self._merging_hi = hi
            self._merging = threading.Thread(
                target=self._merge_upto, args=(hi,), name="bm25-merge", daemon=True
            )
            self._merging.start()

    def _merge_upto(self, hi: int) -> None:
        """Fold every segment below ``hi`` into one. The build runs without the lock: the doc
        arrays it reads for [0, hi) only change by removals, which the alive flags cover.
        When those segments cover [0, hi), from their postings (``_fold``: array operations
        that leave the interpreter to the calls meanwhile), else from the documents."""
        with self._lock:
            segs = [s for s in self._segments if s.hi <= hi]
            vocab = len(self._vocab)
            epoch = self._epoch
            fold = _covers(segs, hi)
            alive = self._alive[:hi].astype(bool)
            docs = [] if fold else self._doc_terms[:hi]
            stop = self._stop[:vocab].copy()
        merged = _fold(segs, vocab, alive) if fold else _build_from(docs, 0, hi, vocab, stop)
        with self._lock:
            self._merging_hi = 0
            if epoch != self._epoch or any(s.lo < hi < s.hi for s in self._segments):
                return  # compacted meanwhile, or a synchronous merge() got there first
            self._segments = (merged, *(s for s in self._segments if s.lo >= hi))
        log.debug("bm25 main merge", extra={"docs": hi, "segments": len(self._segments)})

    def merge(self) -> None:
        """Fold every segment into one now (tests, bulk loads)."""
        self.wait_for_merge()
        with self._lock:
            if self._doc_terms:
                self._segments = (self._build(0, len(self._doc_terms)),)

    def wait_for_merge(self) -> None:
        thread = self._merging
        if thread is not None:
            thread.join()

    # --- reads --------------------------------------------------------------------------

    def _stats_locked(self, groups: Collection[int] | None) -> Stats:
        """The statistics a query of ``groups`` scores with (None: every document)."""
        if groups is None:
            return Stats(len(self._label_doc), self._total_len, None)
        return self._groups.stats(groups)

    def _idf_locked(self, terms: Sequence[str], stats: Stats) -> tuple[np.ndarray, np.ndarray]:
        """(term ids, idf) per query term, as rank-bm25 computes them over the documents of
        ``stats`` (unknown term: -1, 0): each term's computed once while the statistics
        stay the same (``lexical.idf``; ``_idf_fresh`` for up to ``FEW`` terms, else
        ``_idf_of``: the same floats)."""
        listed = [self._vocab.get(t, -1) for t in terms]
        stamp = self._version if stats.groups is None else self._groups.stamp(stats)
        table = self._idf_memo.table(stats.groups, stamp)
        missing = [i for i in dict.fromkeys(listed) if i >= 0 and i not in table]
        if missing:
            table.update(zip(missing, self._idf_fresh(missing, stats) if len(missing) <= FEW
                             else self._idf_of(np.array(missing, np.int64), stats).tolist(),
                             strict=True))
        return (np.array(listed, np.int64),
                np.array([table[i] if i >= 0 else 0.0 for i in listed], np.float64))

    def _idf_fresh(self, ids: list[int], stats: Stats) -> list[float]:
        """``_idf_of`` of known term ids (>= 0), the same floats from fewer numpy calls: the
        two logs of arrays of the values ``_idf_of`` takes them of (the same length and
        order), the rest in Python floats (IEEE doubles, as numpy's float64). A write starts
        the remembered idf afresh, so with capture on this runs every turn."""
        n = stats.n
        if stats.groups is None:
            df = self._df[ids].tolist()
        else:
            df = self._groups.df(stats, np.array(ids, np.int64)).tolist()
        high = np.log(np.array([n - d + 0.5 for d in df], np.float64)).tolist()
        low = np.log(np.array([d + 0.5 for d in df], np.float64)).tolist()
        raw = [h - lo if d > 0 else None for h, lo, d in zip(high, low, df, strict=True)]
        if not any(r is not None and r < 0 for r in raw):
            return [0.0 if r is None else r for r in raw]
        floor = self.epsilon * (self._mean_idf_locked(n) if stats.groups is None
                                else self._groups.mean_idf(stats))
        return [0.0 if r is None else floor if r < 0 else r for r in raw]

    def _idf_of(self, ids: np.ndarray, stats: Stats) -> np.ndarray:
        """The idf of each term id (-1: unknown, 0) over the documents of ``stats``, computed
        (the reference of ``_idf_locked``)."""
        n = stats.n
        if stats.groups is None:
            df = self._df[np.maximum(ids, 0)].astype(np.float64)
        else:
            df = self._groups.df(stats, ids)
        known = (ids >= 0) & (df > 0)
        with np.errstate(divide="ignore", invalid="ignore"):
            raw = np.log(n - df + 0.5) - np.log(df + 0.5)
        mean = 0.0
        if bool(np.any(known & (raw < 0))):  # the floor is needed: the vocabulary's mean idf
            mean = (self._mean_idf_locked(n) if stats.groups is None
                    else self._groups.mean_idf(stats))
        idf = np.where(raw < 0, self.epsilon * mean, raw)
        out: np.ndarray = np.where(known, idf, 0.0)
        return out

    def _mean_idf_locked(self, n: int) -> float:
        version, mean = self._mean_idf
        if version != self._version:
            df = self._df[: len(self._vocab)]
            df = df[df > 0].astype(np.float64)
            mean = float(np.mean(np.log(n - df + 0.5) - np.log(df + 0.5))) if len(df) else 0.0
            self._mean_idf = (self._version, mean)
        return mean

    def _view(self, stats: Stats) -> _View:
        return _View(self._segments, self._doc_len, self._alive, self._doc_label,
                     len(self._doc_terms), stats.n, stats.avgdl)

    def scores(self, text: str, max_terms: int = 0,
               groups: Collection[int] | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Every live document with a non-zero-contribution term: (labels, scores).
        ``max_terms`` > 0: only the query's rarest terms count (``query.rarest``).
        ``groups``: scored with those groups' statistics (``add``); None: every document's.
        Documents of other groups are scored too: the caller's filter drops them."""
        return self._collect(self._accumulate(self.analyzer.query_terms(text), max_terms,
                                              groups=groups))

    def with_context(self, own: tuple[np.ndarray, np.ndarray], context: Weighted,
                     groups: Collection[int] | None = None) -> tuple[np.ndarray, np.ndarray]:
        """``own`` (a query's ``scores``) with the ``context`` texts' scored apart, each
        text's terms at its weight (each term once, the MAX_CONTEXT_TERMS of highest idf x
        weight), and added scaled so that their best scores the largest weight x the best
        own score (``add_context``): context ranks what the query's own words leave tied,
        and never outweighs them."""
        weights = term_weights(self.analyzer, context)
        if not weights:
            return own
        found = self._collect(self._accumulate(extra=weights, groups=groups))
        return add_context(own, found, max(weights.values()))

    def groups_of(self, labels: Sequence[int]) -> set[int]:
        """The groups of the indexed documents among ``labels``."""
        with self._lock:
            docs = [d for d in map(self._label_doc.get, labels) if d is not None]
            return {int(g) for g in self._doc_group[docs]}

    def score_documents(self, labels: Sequence[int], weights: dict[str, float],
                        groups: Collection[int] | None = None) -> np.ndarray:
        """BM25 of each of ``labels`` for the ``weights`` terms (each term's contribution
        times its weight), read from the documents' own term counts: no posting list is
        scanned (a handful of documents, any number of terms). 0 for a label not indexed."""
        out = np.zeros(len(labels), np.float64)
        if not weights:
            return out
        with self._lock:
            stats = self._stats_locked(groups)
            if stats.n == 0 or stats.total_len <= 0:
                return out
            ids, idf = self._idf_locked(list(weights), stats)
            docs = [self._label_doc.get(int(label), -1) for label in labels]
            entries = [self._doc_terms[d] if d >= 0 else None for d in docs]
            lengths = np.array([self._doc_len[d] if d >= 0 else 0.0 for d in docs])
            avgdl = stats.avgdl
        known = ids >= 0
        order = np.argsort(ids[known], kind="stable")
        wanted = ids[known][order]
        value = (idf * np.fromiter(weights.values(), np.float64, len(weights)))[known][order]
        rows = [(k, e) for k, e in enumerate(entries) if e is not None]
        if not rows or not len(wanted):
            return out
        terms = np.concatenate([e[0] for _, e in rows])
        tfs = np.concatenate([e[1] for _, e in rows]).astype(np.float64)
        owner = np.repeat(np.array([k for k, _ in rows]), [len(e[0]) for _, e in rows])
        at = np.minimum(np.searchsorted(wanted, terms), len(wanted) - 1)
        hit = wanted[at] == terms
        norm = self.k1 * (1 - self.b + self.b * lengths[owner[hit]] / avgdl)
        part = value[at[hit]] * tfs[hit] * (self.k1 + 1) / (tfs[hit] + norm)
        np.add.at(out, owner[hit], part)
        return out

    def _collect(
        self, found: tuple[_View, tuple[np.ndarray, np.ndarray, np.ndarray], int] | None
    ) -> tuple[np.ndarray, np.ndarray]:
        """(labels, scores) of what ``_accumulate`` summed, its buffers zeroed again."""
        if found is None:
            return _EMPTY
        snap, (scores, seen, touched), count = found
        try:
            docs = touched[:count].copy()
            return snap.doc_label[docs], scores[docs]
        finally:  # leave the buffers zeroed for the next query: O(touched), not O(documents)
            scores[touched[:count]] = 0.0
            seen[touched[:count]] = 0

    def _accumulate(
        self, terms: list[str] | None = None, max_terms: int = 0,
        extra: dict[str, float] | None = None, groups: Collection[int] | None = None,
    ) -> tuple[_View, tuple[np.ndarray, np.ndarray, np.ndarray], int] | None:
        """The scores of a query's ``terms`` (or of the ``extra`` terms, each one's idf x its
        weight, the MAX_CONTEXT_TERMS best of them) summed into this thread's buffers: (view,
        buffers, touched count), or None when nothing can match. The caller zeroes the
        touched slots."""
        query = self._query(terms, max_terms, extra, groups)
        return None if query is None else self._summed(*query)

    def _query(
        self, terms: list[str] | None = None, max_terms: int = 0,
        extra: dict[str, float] | None = None, groups: Collection[int] | None = None,
    ) -> tuple[_View, np.ndarray, np.ndarray] | None:
        """What ``_accumulate`` sums: (view, term ids, idf or idf x weight), or None when
        there is no term."""
        if not terms and not extra:
            return None
        with self._lock:  # statistics and segments from the same instant
            stats = self._stats_locked(groups)
            if terms:
                ids, idf = rarest(terms, *self._idf_locked(terms, stats), max_terms)
            else:
                assert extra is not None
                ids, idf = self._idf_locked(list(extra), stats)
                idf = idf * np.fromiter(extra.values(), np.float64, len(extra))
                best = np.argsort(-idf, kind="stable")[:MAX_CONTEXT_TERMS]
                ids, idf = ids[best], idf[best]
            snap = self._view(stats)
        return snap, ids, idf

    def _summed(self, snap: _View, ids: np.ndarray, idf: np.ndarray, short: bool = False,
                ) -> tuple[_View, tuple[np.ndarray, np.ndarray, np.ndarray], int] | None:
        """The term ``ids``' contributions (at ``idf``) over the view's segments, summed into
        this thread's buffers, as ``_accumulate`` returns them. ``short``: a read of few
        postings, the GIL kept (``kernels.bm25.bm25_accumulate``)."""
        if snap.n_live == 0 or snap.avgdl <= 0:
            return None
        buffers = scores, seen, touched = self._buffers(snap.n_docs)
        count = 0
        try:
            for seg in snap.segments:
                count = bm25_accumulate(seg.arrays, snap.doc_len, snap.alive, ids, idf, self.k1,
                                        self.b, snap.avgdl, scores, seen, touched, count,
                                        short)
        except BaseException:
            scores[touched[:count]] = 0.0
            seen[touched[:count]] = 0
            raise
        return snap, buffers, count

    def _buffers(self, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per-thread score buffers of exactly ``n`` slots, all zero (views of a larger one)."""
        held = getattr(self._local, "buffers", None)
        if held is None or len(held[0]) < n:
            size = max(n, 1024) * 2
            held = (np.zeros(size, np.float64), np.zeros(size, np.uint8), np.empty(size, np.int64))
            self._local.buffers = held
        return held[0][:n], held[1][:n], held[2][:n]

    def search(
        self, text: str, k: int, accept: Accept | None = None, max_terms: int = 0,
        groups: Collection[int] | None = None, visibility: Visibility | None = None,
    ) -> tuple[np.ndarray, np.ndarray]:
        """Top-k accepted labels by BM25, descending; ties by label ascending: the postings
        that cannot change the top k skipped (``lexical.pruned``; with a filter, only given
        ``visibility``, the columns ``accept`` reads) where that is exact, else every one
        scored (without a filter the best are picked as the buffers are cleared,
        ``kernels.bm25``). ``groups``: as ``scores``."""
        return self._top(self._query(self.analyzer.query_terms(text), max_terms,
                                     groups=groups), k, accept, visibility)

    def search_weighted(self, weights: dict[str, float], k: int, accept: Accept | None = None,
                        groups: Collection[int] | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Top-k accepted labels by BM25 of the ``weights`` terms (each term's contribution
        times its weight, the MAX_CONTEXT_TERMS of highest idf x weight), descending; ties
        by label ascending (as ``search``). ``groups``: as ``scores``."""
        return self._top(self._query(extra=weights, groups=groups), k, accept)

    def _top(self, query: tuple[_View, np.ndarray, np.ndarray] | None, k: int,
             accept: Accept | None, visibility: Visibility | None = None,
             ) -> tuple[np.ndarray, np.ndarray]:
        if query is None or query[0].n_live == 0 or query[0].avgdl <= 0:
            return _EMPTY
        snap, ids, idf = query
        segments: list[SegmentBounds] = [
            (s.arrays, s.bounds()) for s in sorted(snap.segments, key=_size, reverse=True)]
        found = search_pruned(segments, snap.doc_len, snap.alive, snap.doc_label, snap.n_docs,
                              ids, idf, self.k1, self.b, snap.avgdl, k, accept,
                              self._buffers(snap.n_docs), visibility)
        if found is not None:
            return found
        return self._exhaustive(snap, ids, idf, k, accept)

    def _exhaustive(self, snap: _View, ids: np.ndarray, idf: np.ndarray, k: int,
                    accept: Accept | None) -> tuple[np.ndarray, np.ndarray]:
        """``_top`` scoring every posting of the terms (the reference of the pruned one)."""
        summed = self._summed(snap, ids, idf)
        if summed is None:
            return _EMPTY
        if accept is None:
            _, (scores, seen, touched), count = summed
            return bm25_top_k(scores, seen, touched, count, snap.doc_label, max(k, 0))
        return top_k(*accepted(self._collect(summed), accept), k)


def accepted(found: tuple[np.ndarray, np.ndarray],
             accept: Accept | None) -> tuple[np.ndarray, np.ndarray]:
    """The (labels, scores) of ``found`` that ``accept`` keeps (all of them without one)."""
    labels, scores = found
    if len(labels) and accept is not None:
        keep = accept(labels)
        labels, scores = labels[keep], scores[keep]
    return labels, scores


@functools.lru_cache(maxsize=4096)
def distinct_terms(analyzer: Analyzer, text: str) -> tuple[str, ...]:
    """``text``'s query terms, each once (memoised: a conversation's earlier turns and replies
    are the context of several turns; Inject analyses a turn's text, PruneHistory a reply,
    so neither is analysed again when it becomes context)."""
    return tuple(dict.fromkeys(analyzer.query_terms(text)))


def term_weights(analyzer: Analyzer, texts: Weighted) -> dict[str, float]:
    """The query terms of weighted ``texts``, each once at its largest weight."""
    weights: dict[str, float] = {}
    for text, weight in texts:
        for term in distinct_terms(analyzer, text) if weight > 0 else ():
            weights[term] = max(weight, weights.get(term, 0.0))
    return weights


def add_context(own: tuple[np.ndarray, np.ndarray], context: tuple[np.ndarray, np.ndarray],
                weight: float) -> tuple[np.ndarray, np.ndarray]:
    """``own`` scores plus ``context`` scores scaled so that their best is ``weight`` x the
    best own score (``weight`` x 1 when the own terms match nothing): (labels, scores) over
    both label sets. ``own`` alone when either side's best is not positive (a term in most
    documents of a small store scores below 0)."""
    labels, scores = context
    best = float(scores.max()) if len(scores) else 0.0
    top = float(own[1].max()) if len(own[1]) else 1.0
    if best <= 0 or top <= 0:
        return own
    scaled = scores * (weight * top / best)
    merged = np.concatenate([own[0], labels])
    union, where = np.unique(merged, return_inverse=True)
    total = np.zeros(len(union), np.float64)
    np.add.at(total, where, np.concatenate([own[1], scaled]))
    return union.astype(own[0].dtype if len(own[0]) else labels.dtype), total


def top_k(labels: np.ndarray, scores: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The k best (score descending, label ascending on ties)."""
    k = min(k, len(labels))
    if k <= 0:
        return _EMPTY
    if k < len(labels):
        cut = np.partition(scores, len(scores) - k)[len(scores) - k]
        pick = np.flatnonzero(scores >= cut)
        labels, scores = labels[pick], scores[pick]
    order = np.lexsort((labels, -scores))[:k]
    return labels[order], scores[order]


def _size(seg: Segment) -> int:
    return seg.hi - seg.lo


def _covers(segments: Sequence[Segment], hi: int) -> bool:
    """Whether ``segments`` (in order) cover the document ids [0, hi) without a gap."""
    return bool(segments) and segments[0].lo == 0 and segments[-1].hi == hi and all(
        a.hi == b.lo for a, b in zip(segments, segments[1:], strict=False))


def _fold(segments: Sequence[Segment], vocab: int, alive: np.ndarray) -> Segment:
    """The segment ``_build_from`` gives over the ids the ``segments`` cover, from their
    postings (``alive``: non-zero for a live document id, indexed by id): concatenated in
    document order, the removed documents' (not ``alive``) dropped, ordered by term
    (stable: within a term, documents ascending, as a build orders them). Stop words were
    left out when each segment was built."""
    terms = np.concatenate([np.repeat(np.arange(len(s.term_ptr) - 1, dtype=np.int64),
                                      np.diff(s.term_ptr)) for s in segments])
    docs_col = np.concatenate([s.post_doc for s in segments])
    tfs = np.concatenate([s.post_tf for s in segments])
    keep = alive[docs_col] != 0
    terms, docs_col, tfs = terms[keep], docs_col[keep], tfs[keep]
    order = np.argsort(terms, kind="stable")
    ptr = np.zeros(vocab + 1, np.int64)
    np.cumsum(np.bincount(terms, minlength=vocab), out=ptr[1:])
    return Segment(segments[0].lo, segments[-1].hi, ptr, docs_col[order], tfs[order])


def _build_from(
    docs: list[tuple[np.ndarray, np.ndarray] | None], lo: int, hi: int, vocab: int,
    stop: np.ndarray,
) -> Segment:
    """A CSR segment over the live documents with ids in [lo, hi); stop words excluded."""
    entries = [(d, e) for d in range(lo, hi) if (e := docs[d]) is not None]
    if not entries:
        return Segment(lo, hi, np.zeros(vocab + 1, np.int64),
                       np.zeros(0, np.int32), np.zeros(0, np.float32))
    terms = np.concatenate([e[0] for _, e in entries])
    tfs = np.concatenate([e[1] for _, e in entries])
    docs_col = np.repeat(np.array([d for d, _ in entries], np.int32),
                         [len(e[0]) for _, e in entries])
    keep = ~stop[terms]
    terms, tfs, docs_col = terms[keep], tfs[keep], docs_col[keep]
    order = np.argsort(terms, kind="stable")
    ptr = np.zeros(vocab + 1, np.int64)
    np.cumsum(np.bincount(terms, minlength=vocab), out=ptr[1:])
    return Segment(lo, hi, ptr, docs_col[order], tfs[order])

