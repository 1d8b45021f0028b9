from __future__ import annotations

import threading

import numpy as np
import pytest
from rank_bm25 import BM25Okapi

from sidecar.retrieval.lexical import bm25
from sidecar.retrieval.lexical.bm25 import MAX_CONTEXT_TERMS, BM25Index, top_k
from sidecar.retrieval.lexical.tokenize import PLAIN, Analyzer, query_terms, tokenize
from tests import naive
from tests.retrieval.corpus import QUERIES, corpus

PARAMS = [(1.5, 0.75, 0.25), (1.2, 0.5, 0.1), (2.0, 1.0, 0.5)]


def reference(docs: dict[int, str], k1: float, b: float, eps: float,
              analyzer: Analyzer = PLAIN) -> tuple[list[int], BM25Okapi]:
    labels = sorted(docs)
    return labels, BM25Okapi([analyzer.terms(docs[i]) for i in labels], k1=k1, b=b, epsilon=eps)


def assert_same(index: BM25Index, docs: dict[int, str], k1: float, b: float, eps: float) -> None:
    """``index`` scores like rank-bm25 over the same tokens (the index's analyser)."""
    analyzer = index.analyzer
    labels, ref = reference(docs, k1, b, eps, analyzer)
    for q in QUERIES:
        terms = analyzer.query_terms(q)
        with np.errstate(invalid="ignore"):  # rank-bm25: 0/0 for the empty doc when b = 1
            raw = ref.get_scores(terms) if terms else np.zeros(len(labels))
        expected = np.nan_to_num(raw, nan=0.0)  # an empty document contains no term: 0
        got_labels, got_scores = index.scores(q)
        got = dict(zip(got_labels.tolist(), got_scores.tolist(), strict=True))
        full = np.array([got.get(label, 0.0) for label in labels])
        np.testing.assert_allclose(full, expected, rtol=0, atol=1e-6, err_msg=q)
        # identical top-k (score desc, label asc on ties)
        k = 10
        ref_top = top_k(np.array(labels), expected, len(labels))
        ref_top_labels = [lab for lab, s in zip(*ref_top, strict=True) if s != 0][:k]
        assert index.search(q, k)[0].tolist() == ref_top_labels, q


@pytest.mark.parametrize("stemming", [False, True])
@pytest.mark.parametrize("k1,b,eps", PARAMS)
def test_scores_equal_rank_bm25(k1: float, b: float, eps: float, stemming: bool) -> None:
    docs = dict(enumerate(corpus(800), start=1))
    index = BM25Index(k1, b, eps, background_merge=False, analyzer=Analyzer(stemming))
    index.add(list(docs), list(docs.values()))
    assert_same(index, docs, k1, b, eps)


def test_incremental_adds_removes_updates_match_a_rebuild() -> None:
    texts = corpus(1500, seed=3)
    rng = np.random.default_rng(7)
    index = BM25Index(min_main_merge=64, tail_fraction=4, background_merge=False)
    docs: dict[int, str] = {}
    next_label = 1
    for step in range(120):
        size = int(rng.integers(1, 12))
        batch = {next_label + i: texts[(next_label + i) % len(texts)] for i in range(size)}
        next_label += size
        index.add(list(batch), list(batch.values()))
        docs.update(batch)
        if step % 3 == 0:  # forget some
            gone = rng.choice(list(docs), size=min(3, len(docs)), replace=False).tolist()
            index.remove(gone)
            for g in gone:
                del docs[g]
        if step % 5 == 0:  # update some in place (same label, new text)
            changed = rng.choice(list(docs), size=2, replace=False).tolist()
            new = {c: texts[int(rng.integers(len(texts)))] for c in changed}
            index.add(list(new), list(new.values()))
            docs.update(new)
        if step % 40 == 39:
            assert_same(index, docs, 1.5, 0.75, 0.25)
    assert len(index) == len(docs)
    assert index.segment_count < 12  # logarithmic merging keeps the segment count small
    assert_same(index, docs, 1.5, 0.75, 0.25)
    index.merge()
    assert index.segment_count == 1
    assert_same(index, docs, 1.5, 0.75, 0.25)


def test_background_merge_keeps_results_exact() -> None:
    texts = corpus(3000, seed=5)
    index = BM25Index(min_main_merge=100, tail_fraction=8, background_merge=True)
    docs: dict[int, str] = {}
    for start in range(0, 3000, 50):
        batch = {i + 1: texts[i] for i in range(start, start + 50)}
        index.add(list(batch), list(batch.values()))
        docs.update(batch)
        index.remove([start + 1])  # removed while merges may run
        del docs[start + 1]
    index.wait_for_merge()
    assert_same(index, docs, 1.5, 0.75, 0.25)


def test_a_main_merge_is_kept_when_documents_arrive_while_it_runs(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Small batches added while the main merge builds merge among themselves, never with a
    segment the main merge folds: its result is installed (not thrown away and run again)
    and the scores stay exact."""
    texts = corpus(600, seed=9)
    index = BM25Index(min_main_merge=200, tail_fraction=8, background_merge=True)
    building, release = threading.Event(), threading.Event()
    fold = bm25._fold

    def held_main(segments: list, vocab: int, alive: np.ndarray) -> object:
        if threading.current_thread().name == "bm25-merge":  # not the tail's folds
            building.set()  # hold the main merge's build until the batches are in
            assert release.wait(30)
        return fold(segments, vocab, alive)

    monkeypatch.setattr(bm25, "_fold", held_main)
    docs: dict[int, str] = {}

    def add(start: int, n: int) -> None:
        batch = {i + 1: texts[i] for i in range(start, start + n)}
        index.add(list(batch), list(batch.values()))
        docs.update(batch)

    add(0, 150)
    add(150, 190)
    add(340, 20)  # the tail now holds over min_main_merge: a main merge of 360 starts
    assert building.wait(30)
    merging = index._segments[-1].hi
    for start in range(360, 560, 10):  # small batches while it builds: the first would
        add(start, 10)  # merge with the last segment below 360
    release.set()
    index.wait_for_merge()
    assert index._segments[0].lo == 0 and index._segments[0].hi == merging
    assert_same(index, docs, 1.5, 0.75, 0.25)


def test_a_fold_of_the_segments_is_the_segment_a_build_gives() -> None:
    """``_fold`` (the main merge from the segments' postings) against ``_build_from`` (from
    the documents): the same arrays after adds in batches of every size, removals and
    replacements, with stop words and a vocabulary grown since the first segments."""
    rng = np.random.default_rng(12)
    texts = corpus(700, seed=13)
    index = BM25Index(min_main_merge=10**9, background_merge=False)  # segments kept apart
    label = 0
    for _ in range(40):
        n = int(rng.integers(1, 40))
        labels = list(range(label + 1, label + n + 1))
        index.add(labels, [texts[int(i)] for i in rng.integers(0, 700, n)])
        label += n
        gone = rng.integers(1, label + 1, int(rng.integers(0, 4))).tolist()
        index.remove(gone)
        again = rng.integers(1, label + 1, 2).tolist()  # replaced: a new document each
        index.add(again, [texts[int(i)] for i in rng.integers(0, 700, 2)])
    segs = index._segments
    assert len(segs) > 2
    hi, vocab = segs[-1].hi, len(index._vocab)
    want = bm25._build_from(index._doc_terms, 0, hi, vocab, index._stop[:vocab])
    got = bm25._fold(list(segs), vocab, index._alive[:hi].astype(bool))
    assert (got.lo, got.hi) == (want.lo, want.hi)
    for a, b in zip(got.arrays, want.arrays, strict=True):
        assert a.dtype == b.dtype
        np.testing.assert_array_equal(a, b)
    assert not bm25._covers(segs[1:], hi) and bm25._covers(segs, hi)


def postings(seg: bm25.Segment, alive: np.ndarray | None = None) -> tuple[np.ndarray, ...]:
    """``seg``'s (term, document, count) columns, of the ``alive`` documents when given."""
    terms = np.repeat(np.arange(len(seg.term_ptr) - 1), np.diff(seg.term_ptr))
    keep = alive[seg.post_doc] != 0 if alive is not None else slice(None)
    return terms[keep], seg.post_doc[keep], seg.post_tf[keep]


def test_every_segment_the_tail_folds_is_the_segment_a_build_gives() -> None:
    """The tail's merges fold the two last segments' postings: after adds in batches of
    every size, removals and replacements, each segment equals ``_build_from`` over its ids
    (the build from the documents), and the scores stay rank-bm25's."""
    rng = np.random.default_rng(21)
    texts = corpus(900, seed=22)
    index = BM25Index(min_main_merge=10**9, background_merge=False)  # only tail merges
    docs: dict[int, str] = {}
    label, folded = 0, 0
    for _ in range(60):
        n = int(rng.integers(1, 60))
        batch = {label + i + 1: texts[int(rng.integers(0, 900))] for i in range(n)}
        label += n
        before = index.segment_count
        index.add(list(batch), list(batch.values()))
        docs.update(batch)
        folded += index.segment_count <= before
        gone = [g for g in rng.integers(1, label + 1, int(rng.integers(0, 5))).tolist()
                if g in docs]
        index.remove(gone)
        for g in gone:
            docs.pop(g, None)
        again = {int(a): texts[int(rng.integers(0, 900))]
                 for a in rng.integers(1, label + 1, 2) if int(a) in docs}
        index.add(list(again), list(again.values()))
        docs.update(again)
        vocab = len(index._vocab)
        for seg in index._segments:  # its live postings: (term, document, count) in order
            want = bm25._build_from(index._doc_terms, seg.lo, seg.hi, vocab,
                                    index._stop[:vocab])
            for a, b in zip(postings(seg, index._alive), postings(want), strict=True):
                np.testing.assert_array_equal(a, b)
    assert folded > 10  # the tail merged many times
    assert_same(index, docs, 1.5, 0.75, 0.25)


def test_forgotten_and_replaced_text_disappear_at_once() -> None:
    index = BM25Index(background_merge=False)
    index.add([1, 2, 3], ["alpha beta", "beta gamma", "gamma delta"])
    assert index.search("alpha", 10)[0].tolist() == [1]
    assert sorted(index.search("beta", 10)[0].tolist()) == [1, 2]
    index.remove([1])
    assert index.search("alpha", 10)[0].tolist() == []
    assert index.search("beta", 10)[0].tolist() == [2]
    index.add([2], ["zeta only"])
    assert index.search("beta", 10)[0].tolist() == []
    assert index.search("zeta", 10)[0].tolist() == [2]
    index.remove([2, 3, 99])  # unknown labels are ignored
    assert len(index) == 0 and index.search("gamma", 10)[0].tolist() == []


def test_accept_filter_and_k() -> None:
    index = BM25Index(background_merge=False)
    index.add(list(range(1, 21)), ["apple pie"] * 10 + ["apple"] * 10)
    labels, scores = index.search("apple", 5, accept=lambda ls: ls % 2 == 0)
    assert len(labels) == 5 and all(label % 2 == 0 for label in labels)
    assert list(scores) == sorted(scores, reverse=True)
    assert len(index.search("apple", 0)[0]) == 0


def test_naive_formula_agrees_with_rank_bm25() -> None:
    """The hand-written reference and rank-bm25 agree, so either may be trusted."""
    docs = [tokenize(t) for t in corpus(200) if t]
    q = query_terms("term1 term2 the car")
    np.testing.assert_allclose(naive.bm25_scores(docs, q), BM25Okapi(docs).get_scores(q),
                               atol=1e-9)


def test_bulk_load_then_merge_and_duplicate_labels_in_a_batch() -> None:
    docs = dict(enumerate(corpus(300, seed=9), start=1))
    index = BM25Index(background_merge=False)
    items = list(docs.items())
    for start in range(0, len(items), 64):
        chunk = items[start:start + 64]
        index.add([k for k, _ in chunk], [v for _, v in chunk], bulk=True)
    assert index.search("term1", 5)[0].tolist() == []  # not searchable before the merge
    index.merge()
    assert_same(index, docs, 1.5, 0.75, 0.25)
    index.add([1, 1], ["first version", "second version"])  # the last one wins
    docs[1] = "second version"
    assert len(index) == len(docs)
    assert index.search("first", 5)[0].tolist() == []
    assert_same(index, docs, 1.5, 0.75, 0.25)


def test_stemming_index_matches_inflected_queries_only_when_on() -> None:
    texts = ["We booked two flights to Lisbon", "She enjoys running marathons", "flight"]
    plain, stemmed = BM25Index(background_merge=False), BM25Index(
        background_merge=False, analyzer=Analyzer(stemming=True))
    for index in (plain, stemmed):
        index.add([1, 2, 3], texts)
    assert plain.search("flights", 5)[0].tolist() == [1]
    assert sorted(stemmed.search("flights", 5)[0].tolist()) == [1, 3]
    assert stemmed.search("she enjoyed a run", 5)[0].tolist() == [2]
    assert plain.search("she enjoyed a run", 5)[0].tolist() == []


@pytest.mark.parametrize("k", [1, 5, 20, 5000])
def test_unfiltered_top_k_equals_the_filtered_path(k: int) -> None:
    """The top-k kernel (no filter) picks what sorting every score picks, ties included
    (duplicated documents), over several segments and removed documents."""
    texts = corpus(600, seed=5)
    index = BM25Index(background_merge=False, min_main_merge=10**9)
    for start in range(0, len(texts), 150):
        labels = list(range(start + 1, start + 151))
        index.add(labels, texts[start:start + 150])
        index.add([start + 1000 + x for x in range(20)], texts[start:start + 20])  # twins
    index.remove(list(range(1, 600, 7)))
    assert index.segment_count > 1
    everything = lambda labels: np.ones(len(labels), bool)  # noqa: E731
    for q in QUERIES:
        got = index.search(q, k)
        want = index.search(q, k, accept=everything)
        assert got[0].tolist() == want[0].tolist(), q
        assert got[1].tolist() == want[1].tolist(), q
        assert got[1].dtype == np.float64 and got[0].dtype == np.int64
    # The buffers were cleared: the same query scores the same twice.
    assert index.scores("term1 term2")[1].tolist() == index.scores("term1 term2")[1].tolist()


@pytest.mark.parametrize("stemming", [False, True])
def test_context_scores_equal_the_written_out_formula(stemming: bool) -> None:
    texts = corpus(600, seed=5)
    docs = dict(enumerate(texts, start=1))
    analyzer = Analyzer(stemming)
    index = BM25Index(background_merge=False, analyzer=analyzer)
    index.add(list(docs), list(docs.values()))
    rng = np.random.default_rng(11)
    tokens = [analyzer.terms(docs[i]) for i in sorted(docs)]
    for q in [*QUERIES, "why?"]:
        picks = rng.choice(len(texts), size=3, replace=False)
        context = [(texts[int(i)], w) for i, w in zip(picks, (1.0, 0.5, 0.25), strict=True)]
        got_labels, got_scores = index.with_context(index.scores(q), context)
        got = dict(zip(got_labels.tolist(), got_scores.tolist(), strict=True))
        expected = naive.bm25_with_context(
            tokens, analyzer.query_terms(q),
            [(analyzer.query_terms(t), w) for t, w in context], MAX_CONTEXT_TERMS)
        assert got.keys() == {i + 1 for i in expected}, q
        np.testing.assert_allclose([got[i + 1] for i in sorted(expected)],
                                   [expected[i] for i in sorted(expected)], atol=1e-6,
                                   err_msg=q)


@pytest.mark.parametrize("stemming", [False, True])
def test_scores_of_given_documents_equal_the_written_out_formula(stemming: bool) -> None:
    """``score_documents``: each term's BM25 times its weight, summed, for the documents
    asked (removed, replaced and unknown ones included), as the postings would score them."""
    texts = corpus(400, seed=9)
    docs = dict(enumerate(texts, start=1))
    analyzer = Analyzer(stemming)
    index = BM25Index(background_merge=False, analyzer=analyzer)
    index.add(list(docs), list(docs.values()))
    index.remove([7, 8])
    del docs[7], docs[8]
    docs[9] = texts[0]
    index.add([9], [texts[0]])
    labels = sorted(docs)
    tokens = [analyzer.terms(docs[i]) for i in labels]
    rng = np.random.default_rng(4)
    for q in QUERIES:
        terms = list(dict.fromkeys(analyzer.query_terms(q)))
        weights = {t: float(w) for t, w in zip(terms, rng.uniform(0.1, 2.0, len(terms)),
                                               strict=True)}
        asked = [*map(int, rng.choice(labels, size=12, replace=False)), 7, 10_000]
        got = index.score_documents(asked, weights)
        per_term = {t: naive.bm25_scores(tokens, [t]) for t in weights}
        row = {label: k for k, label in enumerate(labels)}
        expected = [sum(w * per_term[t][row[a]] for t, w in weights.items()) if a in row
                    else 0.0 for a in asked]
        np.testing.assert_allclose(got, expected, atol=1e-9, err_msg=q)
        assert index.score_documents(asked, {}).tolist() == [0.0] * len(asked)


def test_a_weighted_search_returns_the_best_accepted_documents_by_the_formula() -> None:
    """``search_weighted``: the k accepted documents of highest weighted BM25 (the
    written-out formula), ties by label, as ``score_documents`` scores every document."""
    texts = corpus(400, seed=5)
    labels = list(range(1, len(texts) + 1))
    index = BM25Index(background_merge=False)
    index.add(labels, texts)
    tokens = [index.analyzer.terms(t) for t in texts]
    rng = np.random.default_rng(6)

    def odd(found: np.ndarray) -> np.ndarray:
        return found % 2 == 1

    for q in QUERIES:
        terms = list(dict.fromkeys(index.analyzer.query_terms(q)))
        weights = {t: float(w) for t, w in zip(terms, rng.uniform(0.1, 2.0, len(terms)),
                                               strict=True)}
        per_term = {t: naive.bm25_scores(tokens, [t]) for t in weights}
        total = [sum(w * per_term[t][i] for t, w in weights.items()) for i in range(len(texts))]
        touched = [k for k in range(len(texts)) if any(t in tokens[k] for t in weights)]
        for accept in (None, odd):
            pool = [k for k in touched if accept is None or labels[k] % 2 == 1]
            best = sorted(pool, key=lambda k: (-total[k], labels[k]))[:7]
            got, scores = index.search_weighted(weights, 7, accept)
            assert got.tolist() == [labels[k] for k in best], q
            np.testing.assert_allclose(scores, [total[k] for k in best], atol=1e-9)
    assert index.search_weighted({}, 7)[0].tolist() == []


@pytest.mark.parametrize("stemming", [False, True])
def test_documents_added_with_their_terms_analysed_score_as_added_as_texts(
        stemming: bool) -> None:
    docs = dict(enumerate(corpus(60)))
    analyzer = Analyzer(stemming)
    index = BM25Index(analyzer=analyzer)
    labels = list(docs)
    for start in range(0, len(labels), 7):  # batches, as a scope's load and later writes
        part = labels[start:start + 7]
        index.add(part, [docs[i] for i in part], groups=[0] * len(part),
                  terms=[analyzer.terms(docs[i]) for i in part])
    assert_same(index, docs, index.k1, index.b, index.epsilon)
    with pytest.raises(ValueError):
        index.add([1, 2], ["a", "b"], terms=[["a"]])
