"""The pruned top-k BM25 against scoring every posting, on corpora made to trip it: texts of
one length from a small vocabulary (whole runs of documents tie at the k-th score), bounds
cached and then removals, replacements of other lengths, folds, merges, a compaction and a
restore; group statistics; filters rejecting most documents; k about ``MAX_K``."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from sidecar.retrieval.lexical import pruned
from sidecar.retrieval.lexical.bm25 import BOUNDS_MIN_DOCS, BM25Index, Segment, accepted, top_k

KS = [1, 2, 5, 31, 32, 33, 200, 10_000]
ACCEPTS = [None, lambda labels: labels % 17 == 3, lambda labels: labels % 3 != 0]


def same(got: tuple[np.ndarray, np.ndarray], want: tuple[np.ndarray, np.ndarray]) -> None:
    assert got[0].tolist() == want[0].tolist()
    assert got[1].tolist() == want[1].tolist()  # the same floats, not close ones


def texts(rng: np.random.Generator, n: int, vocab: int, length: int) -> list[str]:
    """``n`` texts of ``length`` words from ``vocab`` words: many identical ones."""
    return [" ".join(f"t{w}q" for w in rng.integers(0, vocab, length).tolist())
            for _ in range(n)]


def queries(rng: np.random.Generator, vocab: int) -> list[str]:
    out = [" ".join(f"t{w}q" for w in rng.integers(0, vocab, int(rng.integers(1, 6))).tolist())
           for _ in range(12)]
    return [*out, "t0q t0q t0q", "t1q t1q t2q", "absent t3q", "absent", "t0q absent t0q"]


def check(index: BM25Index, rng: np.random.Generator, vocab: int,
          groups: tuple[set[int] | None, ...] = (None,)) -> int:
    """Every query, k, filter and group set: the pruned answer is the reference's. Returns
    how many answers the pruned path gave (not a fallback)."""
    ran = 0
    for text in queries(rng, vocab):
        for group in groups:
            every = index.scores(text, groups=group)
            query = index._query(index.analyzer.query_terms(text), groups=group)
            for accept in ACCEPTS:
                for k in KS:
                    want = top_k(*accepted(every, accept), k)
                    if accept is None:
                        same(index.search(text, k, None, groups=group), want)
                    if query is None or not 0 < k <= pruned.MAX_K:
                        continue
                    snap, ids, idf = query
                    segments = [(s.arrays, s.bounds()) for s in sorted(
                        snap.segments, key=lambda s: s.hi - s.lo, reverse=True)]
                    found = pruned.search_pruned(
                        segments, snap.doc_len, snap.alive, snap.doc_label, snap.n_docs, ids,
                        idf, index.k1, index.b, snap.avgdl, k, None, index._buffers(snap.n_docs))
                    if found is not None and accept is None:
                        ran += 1
                        same(found, want)
    return ran


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_ties_of_one_length_through_removals_merges_and_a_compaction(seed: int) -> None:
    rng = np.random.default_rng(seed)
    vocab = 40
    index = BM25Index(background_merge=False, min_main_merge=300)
    labels = list(range(1, 1201))
    for part in np.array_split(np.array(labels), 4):
        index.add(part.tolist(), texts(rng, len(part), vocab, 3))
    assert any(s.hi - s.lo >= BOUNDS_MIN_DOCS for s in index._segments)
    assert check(index, rng, vocab) > 0  # bounds cached now
    # remove the documents of the largest tf and the shortest (a term alone): bounds stale
    index.add(list(range(2000, 2100)), [f"t{w % vocab}q t{w % vocab}q t{w % vocab}q"
                                         for w in range(100)])
    index.add(list(range(3000, 3040)), [f"t{w}q" for w in range(40)])
    assert check(index, rng, vocab) > 0
    index.remove(list(range(2000, 2100)) + list(range(3000, 3040)) + labels[::7])
    assert check(index, rng, vocab) > 0
    again = labels[::7][:60]  # replaced, of other lengths
    index.add(again, texts(rng, len(again), vocab, int(rng.integers(1, 9))))
    index.add(list(range(5000, 5300)), texts(rng, 300, vocab, 1))
    assert check(index, rng, vocab) > 0
    index.merge()
    assert index.segment_count == 1 and check(index, rng, vocab) > 0
    index.remove(labels[1::2])
    assert check(index, rng, vocab) > 0
    index.compact()
    assert check(index, rng, vocab) > 0
    copy = BM25Index(background_merge=False)
    copy.restore(index.export())
    assert check(copy, rng, vocab) > 0


def test_group_statistics_and_near_zero_idf() -> None:
    """Two groups of different sizes and lengths: a term common in one is rare in the
    other, its idf near 0 (or below, then every posting is scored) in a group's statistics."""
    rng = np.random.default_rng(7)
    vocab = 12
    index = BM25Index(background_merge=False)
    index.add(list(range(1, 601)), texts(rng, 600, vocab, 2), groups=[1] * 600)
    index.add(list(range(601, 1001)), texts(rng, 400, 3 * vocab, 5), groups=[2] * 400)
    index.merge()
    assert check(index, rng, 3 * vocab, (None, {1}, {2}, {1, 2})) > 0


@pytest.mark.parametrize("k", [32, 33])
def test_k_at_the_bound_on_copies(k: int) -> None:
    """Every document one of four texts: k at and past ``MAX_K`` inside runs of ties."""
    index = BM25Index(background_merge=False)
    kinds = ["t1q t2q t3q", "t1q t1q t4q", "t2q t5q t6q", "t7q t8q t9q"]
    index.add(list(range(1, 1001)), [kinds[i % 4] for i in range(1000)])
    index.merge()
    for text in ("t1q", "t1q t2q", "t2q t1q t9q", "t1q t1q"):
        same(index.search(text, k), top_k(*index.scores(text), k))
        index.remove([n for n in range(1, 1001, 9)])
        same(index.search(text, k), top_k(*index.scores(text), k))


def test_threads_filling_the_bounds_at_once() -> None:
    """Several threads' first searches of one segment fill its per-term bounds together (the
    kernels run without the GIL): each answer is the reference's."""
    rng = np.random.default_rng(11)
    vocab = 60
    index = BM25Index(background_merge=False)
    index.add(list(range(1, 3001)), texts(rng, 3000, vocab, 4))
    index.merge()
    asked = [(q, k) for q in queries(rng, vocab) for k in (1, 7, 32)]
    want = [top_k(*index.scores(q), k) for q, k in asked]
    for _ in range(3):
        index._segments = tuple(  # bounds not worked out yet
            Segment(s.lo, s.hi, s.term_ptr, s.post_doc, s.post_tf) for s in index._segments)
        got: dict[int, list[tuple[np.ndarray, np.ndarray]]] = {}

        def ask(n: int, got: dict[int, list[tuple[np.ndarray, np.ndarray]]] = got) -> None:
            shift = n * len(asked) // 4  # each thread from another place
            answers = {i: index.search(*asked[i]) for i in
                       [*range(shift, len(asked)), *range(shift)]}
            got[n] = [answers[i] for i in range(len(asked))]

        threads = [threading.Thread(target=ask, args=(n,)) for n in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        for answers in got.values():
            for answer, reference in zip(answers, want, strict=True):
                same(answer, reference)
