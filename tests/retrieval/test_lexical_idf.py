"""The idf a BM25 index remembers per term (``lexical.idf``) is the idf computed afresh
(``BM25Index._idf_of``) after every kind of change: adds, replacements into another group,
removals that empty a group and adds that fill it again, compaction; a change to one group
keeps what was remembered for queries that do not read it."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from sidecar.retrieval.lexical.bm25 import FEW, BM25Index
from sidecar.retrieval.lexical.idf import IdfMemo
from sidecar.retrieval.lexical.tokenize import Analyzer
from tests.retrieval.corpus import corpus

GROUPS = (None, (0,), (1,), (0, 2), (1, 2, 3), (3,))


def terms_of(index: BM25Index, rng: np.random.Generator, size: int) -> list[str]:
    vocab = list(index._vocab)
    return [*rng.choice(vocab, size=size).tolist(), "nosuchterm", "the"] if vocab else ["x"]


def assert_remembered_is_computed(index: BM25Index, rng: np.random.Generator) -> None:
    for groups, size in itertools.product(GROUPS, (12, 3 * FEW)):  # in Python; in numpy
        terms = terms_of(index, rng, size)
        with index._lock:
            stats = index._stats_locked(groups)
            for _ in range(2):  # computed, then remembered
                ids, idf = index._idf_locked(terms, stats)
                expected = index._idf_of(ids, stats)
                assert ids.tolist() == [index._vocab.get(t, -1) for t in terms]
                assert idf.tolist() == expected.tolist(), groups  # equal, not close


@pytest.mark.parametrize("seed", [3, 4])
def test_remembered_idf_is_the_computed_one_through_changes(seed: int) -> None:
    rng = np.random.default_rng(seed)
    texts = corpus(900, seed=seed)
    # small groups: terms in most of a group's documents take the floor (negative idf)
    index = BM25Index(background_merge=False, min_main_merge=64, analyzer=Analyzer(True))
    assert_remembered_is_computed(index, rng)
    labels = list(range(1, 601))
    kinds = rng.choice([0, 1, 2, 3], size=len(labels), p=[0.7, 0.2, 0.08, 0.02]).tolist()
    for start in range(0, len(labels), 150):
        batch = labels[start:start + 150]
        index.add(batch, [texts[i] for i in batch], groups=[kinds[i - 1] for i in batch])
        assert_remembered_is_computed(index, rng)
    index.add([5, 6, 7], [texts[700], texts[701], texts[702]], groups=[3, 3, 1])
    assert_remembered_is_computed(index, rng)
    index.remove([label for label, kind in zip(labels, kinds, strict=True) if kind == 3])
    index.remove([5, 6])  # group 3 is empty now
    assert_remembered_is_computed(index, rng)
    index.add([800, 801], [texts[800], texts[801]], groups=[3, 3])  # and filled again
    assert_remembered_is_computed(index, rng)
    index.remove(labels[:500])
    assert index.compact()  # term ids renumbered
    assert_remembered_is_computed(index, rng)
    index.add(list(range(900, 1000)), texts[:100], groups=[0] * 100)
    assert_remembered_is_computed(index, rng)


def test_a_change_to_one_group_keeps_the_others_tables() -> None:
    texts = corpus(300, seed=9)
    index = BM25Index(background_merge=False)
    index.add(list(range(300)), texts, groups=[i % 3 for i in range(300)])
    terms = list(index._vocab)[:40]
    with index._lock:
        one = index._idf_locked(terms, index._stats_locked({1}))[1]
        both = index._idf_locked(terms, index._stats_locked({0, 2}))[1]
        table = index._idf_memo.table((1,), index._groups.stamp(index._stats_locked({1})))
    assert len(table) > 0
    index.add([1000], ["a new text for group two only"], groups=[2])
    with index._lock:
        kept = index._idf_memo.table((1,), index._groups.stamp(index._stats_locked({1})))
        assert kept is table  # group 1 did not change
        assert index._idf_locked(terms, index._stats_locked({1}))[1].tolist() == one.tolist()
        stats = index._stats_locked({0, 2})
        ids, now = index._idf_locked(terms, stats)
        assert now.tolist() == index._idf_of(ids, stats).tolist()
        assert now.tolist() != both.tolist()  # group 2 changed: computed again


def test_tables_are_bounded() -> None:
    memo = IdfMemo(limit=2)
    memo.table((1,), (5,))[3] = 0.5
    memo.table((2,), (6,))
    assert memo.table((1,), (5,)) == {3: 0.5}
    assert memo.table((1,), (7,)) == {}  # its stamp changed
    memo.table((3,), (8,))  # a third set of groups: all dropped
    assert memo.table((2,), (6,)) == {}
