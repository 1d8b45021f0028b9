"""BM25 per group (a scope): a query given groups scores like rank-bm25 over the documents of
those groups alone, whatever other groups the index holds, through adds, removals, updates
that move a document to another group, and saved postings."""

from __future__ import annotations

import numpy as np
import pytest
from rank_bm25 import BM25Okapi

from sidecar.retrieval.lexical.bm25 import BM25Index, top_k
from tests.retrieval.corpus import QUERIES, corpus


def expected_scores(index: BM25Index, docs: dict[int, str], query: str,
                    distinct: bool = False) -> np.ndarray:
    labels = sorted(docs)
    ref = BM25Okapi([index.analyzer.terms(docs[i]) for i in labels], k1=index.k1, b=index.b,
                    epsilon=index.epsilon)
    terms = index.analyzer.query_terms(query)
    if distinct:
        terms = list(dict.fromkeys(terms))
    return ref.get_scores(terms) if terms else np.zeros(len(labels))


def assert_group_scores(index: BM25Index, docs: dict[int, tuple[str, int]],
                        groups: set[int]) -> None:
    mine = {label: text for label, (text, g) in docs.items() if g in groups}
    labels = sorted(mine)
    for query in QUERIES:
        expected = expected_scores(index, mine, query)
        got_labels, got_scores = index.scores(query, groups=groups)
        got = dict(zip(got_labels.tolist(), got_scores.tolist(), strict=True))
        np.testing.assert_allclose([got.get(label, 0.0) for label in labels], expected,
                                   rtol=0, atol=1e-9, err_msg=query)
        accept = np.vectorize(lambda x: x in mine, otypes=[bool])
        best = top_k(np.array(labels, np.int64), expected, len(labels))
        want = [x for x, s in zip(*best, strict=True) if s != 0][:10]
        assert index.search(query, 10, accept, groups=groups)[0].tolist() == want, query
        np.testing.assert_allclose(
            index.score_documents(labels, {t: 1.0 for t in index.analyzer.query_terms(query)},
                                  groups=groups),
            expected_scores(index, mine, query, distinct=True), rtol=0, atol=1e-9)


@pytest.mark.parametrize("groups", [{1}, {1, 2}, {0, 2, 3}])
def test_group_scores_equal_rank_bm25_over_the_groups_alone(groups: set[int]) -> None:
    texts = corpus(900, seed=11)
    rng = np.random.default_rng(5)
    # Group sizes far apart (a shared scope, an agent's, small users'), so the statistics of
    # the whole index differ from every group's.
    kinds = rng.choice([0, 1, 2, 3], size=len(texts), p=[0.6, 0.25, 0.1, 0.05])
    docs = {i + 1: (t, int(g)) for i, (t, g) in enumerate(zip(texts, kinds, strict=True))}
    index = BM25Index(background_merge=False, min_main_merge=64)
    index.add(list(docs), [t for t, _ in docs.values()], groups=[g for _, g in docs.values()])
    assert_group_scores(index, docs, groups)
    gone = rng.choice(list(docs), size=120, replace=False).tolist()
    index.remove(gone)
    for label in gone:
        del docs[label]
    moved = rng.choice(list(docs), size=60, replace=False).tolist()  # text and group change
    new = {label: (texts[int(rng.integers(len(texts)))], int(rng.integers(4))) for label in moved}
    index.add(list(new), [t for t, _ in new.values()], groups=[g for _, g in new.values()])
    docs.update(new)
    assert_group_scores(index, docs, groups)
    restored = BM25Index(background_merge=False)
    postings = index.export(groups=groups)
    restored.restore(postings, groups=np.array([docs[x][1] for x in postings.labels.tolist()]))
    assert_group_scores(restored, {k: v for k, v in docs.items() if v[1] in groups}, groups)


def test_a_group_emptied_then_refilled_scores_from_scratch() -> None:
    index = BM25Index(background_merge=False)
    index.add([1, 2, 3], ["red apple pie", "red car", "green apple"], groups=[7, 7, 8])
    index.remove([1, 2])
    assert index.scores("red", groups={7})[0].tolist() == []
    index.add([4, 5], ["red bus", "blue bus"], groups=[7, 7])
    docs = {4: ("red bus", 7), 5: ("blue bus", 7), 3: ("green apple", 8)}
    assert_group_scores(index, docs, {7})


def test_compaction_after_most_documents_left_keeps_every_score() -> None:
    texts = corpus(3000, seed=4)
    docs = {i + 1: (t, i % 7) for i, t in enumerate(texts)}
    index = BM25Index(background_merge=False, min_main_merge=64)
    index.add(list(docs), [t for t, _ in docs.values()], groups=[g for _, g in docs.values()])
    assert not index.compact()  # nothing removed yet
    gone = [label for label, (_, g) in docs.items() if g != 3]
    index.remove(gone)
    for label in gone:
        del docs[label]
    before = {q: index.scores(q, groups={3}) for q in QUERIES}
    assert index.compact()
    assert len(index._doc_terms) == len(docs)  # noqa: SLF001 - the ids renumbered
    for q, (labels, scores) in before.items():
        got_labels, got_scores = index.scores(q, groups={3})
        assert dict(zip(got_labels.tolist(), got_scores.tolist(), strict=True)) == pytest.approx(
            dict(zip(labels.tolist(), scores.tolist(), strict=True)), abs=1e-12)
    assert_group_scores(index, docs, {3})
    index.add([99_999], ["a document after the compaction"], groups=[3])
    docs[99_999] = ("a document after the compaction", 3)
    assert_group_scores(index, docs, {3})


def test_restoring_or_compacting_to_nothing_leaves_an_empty_index() -> None:
    index = BM25Index(background_merge=False, min_main_merge=4)
    index.restore(index.export())
    assert len(index) == 0 and index.scores("anything")[0].tolist() == []
    index.add(list(range(1, 9)), [f"word{i} shared" for i in range(8)], groups=[1] * 8)
    index.remove(list(range(1, 9)))
    assert index.compact()
    assert len(index) == 0 and index.scores("shared", groups={1})[0].tolist() == []
    index.add([20], ["shared again"], groups=[1])
    assert index.search("shared", 5, groups={1})[0].tolist() == [20]
