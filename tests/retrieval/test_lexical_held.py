"""``lexical.held``: the terms a document holds, read from the index, against analysing its
text; the search of the rarest terms within a postings budget, against ``search_weighted``
of the terms it keeps (chosen here from document frequencies counted over the texts)."""

from __future__ import annotations

import numpy as np
import pytest

from sidecar.retrieval.lexical.bm25 import BM25Index
from sidecar.retrieval.lexical.held import (
    Looked,
    _looked,
    held_scores,
    looked_up,
    rare_search,
    terms_held,
)
from sidecar.retrieval.lexical.tokenize import Analyzer
from tests.retrieval.corpus import QUERIES, corpus


def indexed(stemming: bool, n: int = 600) -> tuple[BM25Index, dict[int, str]]:
    docs = dict(enumerate(corpus(n, seed=5), start=1))
    index = BM25Index(background_merge=False, min_main_merge=64, analyzer=Analyzer(stemming))
    labels = list(docs)
    for start in range(0, len(labels), 97):  # several segments
        batch = labels[start:start + 97]
        index.add(batch, [docs[i] for i in batch])
    return index, docs


@pytest.mark.parametrize("stemming", [False, True])
def test_terms_held_count_what_analysing_the_text_finds(stemming: bool) -> None:
    index, docs = indexed(stemming)
    analyzer = index.analyzer
    index.add([7], ["The harbour bakery sold rye bread to the harbour hotel."])  # replaced
    docs[7] = "The harbour bakery sold rye bread to the harbour hotel."
    index.remove([9])
    del docs[9]
    labels = [*range(1, 40), 9, 10_000]
    for query in [*QUERIES, "harbour bread hotels the of", "no such words here zzq"]:
        terms = set(analyzer.query_terms(query))
        got = terms_held(index, labels, terms)
        expected = [len(terms & set(analyzer.query_terms(docs[label]))) if label in docs
                    else -1 for label in labels]
        assert got.tolist() == expected, query


def test_terms_held_of_nothing() -> None:
    index, _ = indexed(False, 50)
    assert terms_held(index, [], {"bread"}).tolist() == []
    assert terms_held(index, [1, 2], set()).tolist() == [0, 0]


def document_frequency(analyzer: Analyzer, docs: dict[int, str]) -> dict[str, int]:
    df: dict[str, int] = {}
    for text in docs.values():
        for term in set(analyzer.terms(text)):
            df[term] = df.get(term, 0) + 1
    return df


@pytest.mark.parametrize("stemming", [False, True])
def test_with_every_term_within_the_budget_it_is_search_weighted(stemming: bool) -> None:
    index, _ = indexed(stemming)
    for query in QUERIES:
        weights = {t: 1.0 + (i % 2) for i, t in enumerate(index.analyzer.query_terms(query))}
        expected = index.search_weighted(weights, 20)
        got = rare_search(index, weights, 20, budget=10**9)
        assert got[0].tolist() == expected[0].tolist(), query
        assert got[1].tolist() == expected[1].tolist(), query


@pytest.mark.parametrize("budget", [0, 5, 40, 150, 400])
def test_it_reads_the_rarest_terms_while_their_postings_fit_the_budget(budget: int) -> None:
    index, docs = indexed(False)
    df = document_frequency(index.analyzer, docs)
    accept = (lambda labels: labels % 3 != 0)  # noqa: E731 - a viewer's filter
    for query in QUERIES:
        weights = {t: 2.0 if i % 3 else 1.0
                   for i, t in enumerate(dict.fromkeys(index.analyzer.query_terms(query)))}
        known = sorted((t for t in weights if df.get(t, 0)), key=lambda t: df[t])
        if len({df[t] for t in known}) < len(known):
            continue  # equal frequencies: which of them comes first is the index's order
        kept, total = set(), 0
        for term in known:
            total += df[term]
            if total > budget:
                break
            kept.add(term)
        expected = (index.search_weighted({t: w for t, w in weights.items() if t in kept}, 10,
                                          accept) if kept else (np.zeros(0), np.zeros(0)))
        got = rare_search(index, weights, 10, budget, accept)
        assert got[0].tolist() == expected[0].tolist(), (query, budget)
        assert got[1].tolist() == expected[1].tolist(), (query, budget)
        assert sum(df[t] for t in kept) <= budget


def changed_index(seed: int, groups: bool) -> tuple[BM25Index, list[int]]:
    """An index through adds in batches, replacements (some to another group), removals and a
    compaction, with the labels ever written."""
    rng = np.random.default_rng(seed)
    texts = corpus(700, seed=seed)
    index = BM25Index(background_merge=False, min_main_merge=64, analyzer=Analyzer(True))
    labels = list(range(1, len(texts) + 1))
    kinds = rng.integers(0, 4, size=len(labels)).tolist()
    for start in range(0, 500, 83):
        batch = labels[start:start + 83]
        index.add(batch, [texts[i - 1] for i in batch],
                  groups=[kinds[i - 1] for i in batch] if groups else None)
    moved = rng.choice(labels[:500], size=40, replace=False).tolist()
    index.add(moved, [texts[-i] for i in moved],
              groups=[int(rng.integers(0, 4)) for _ in moved] if groups else None)
    index.remove(rng.choice(labels[:500], size=300, replace=False).tolist())
    index.compact()
    index.add(labels[500:], [texts[i - 1] for i in labels[500:]],
              groups=[kinds[i - 1] for i in labels[500:]] if groups else None)
    return index, labels


@pytest.mark.parametrize("seed", [1, 2])
@pytest.mark.parametrize("groups", [None, {0}, {1, 3}])
def test_held_scores_are_terms_held_and_score_documents(seed: int,
                                                        groups: set[int] | None) -> None:
    index, labels = changed_index(seed, groups is not None)
    rng = np.random.default_rng(seed)
    for query in [*QUERIES, "harbour bread hotels", "zzq unknown words"]:
        asked = index.analyzer.query_terms(query)
        weights = {t: (1.0, 2.0, 0.5)[i % 3] for i, t in enumerate(dict.fromkeys(asked))}
        held_terms = set(asked[::2]) | {"term3", "nosuchterm"}
        some = [*rng.choice(labels, size=30).tolist(), -1, 10**6]
        for docs in (some, [], [some[0]]):
            got = held_scores(index, docs, held_terms, weights, groups)
            assert got[0].tolist() == terms_held(index, docs, held_terms).tolist(), query
            # the same float operations in the same order: equal, not close
            assert got[1].tolist() == index.score_documents(docs, weights, groups).tolist()


def test_held_scores_of_an_empty_index() -> None:
    index = BM25Index(background_merge=False)
    got = held_scores(index, [1, 2], {"bread"}, {"bread": 1.0})
    assert got[0].tolist() == [-1, -1] and got[1].tolist() == [0.0, 0.0]


def same_looked(a: Looked, b: Looked) -> bool:
    return (a.wanted.tolist() == b.wanted.tolist() and a.counted.tolist() == b.counted.tolist()
            and a.scored.tolist() == b.scored.tolist() and a.value.tolist() == b.value.tolist()
            and a.avgdl == b.avgdl)


@pytest.mark.parametrize("groups", [None, {0}, {1, 3}])
def test_what_held_scores_looks_for_is_remembered_while_the_documents_stay(
        groups: set[int] | None) -> None:
    """The remembered ``Looked`` against working it out afresh, asked again after each change
    of the index: adds (new terms too), a replacement into another group, removals, a
    compaction; and held_scores against its references meanwhile."""
    index, labels = changed_index(3, groups is not None)
    rng = np.random.default_rng(3)
    asked = [index.analyzer.query_terms(q) for q in [*QUERIES, "harbour zzqnew bread"]]
    changes = [
        lambda: index.add([9001], ["zzqnew harbour bread rye"], groups=[0] if groups else None),
        lambda: index.add([labels[0]], ["harbour harbour hotel"],
                          groups=[3] if groups else None),
        lambda: index.remove(labels[1:40]),
        lambda: index.add([9002], ["zzqnew again"], groups=[2] if groups else None),
        index.compact,
        lambda: index.remove([9001]),
    ]
    for change in [lambda: None, *changes]:
        change()
        some = [*rng.choice([*labels, 9001, 9002], size=20).tolist(), -1]
        for terms in asked:
            weights = {t: (1.0, 2.0)[i % 2] for i, t in enumerate(dict.fromkeys(terms))}
            held_terms = set(terms[1::2]) | {"zzqnew"}
            with index._lock:
                first = _looked(index, held_terms, weights, groups)
                again = _looked(index, held_terms, dict(weights), groups)
                fresh = looked_up(index, held_terms, weights, index._stats_locked(groups))
            assert again is first  # remembered
            assert same_looked(first, fresh)
            got = held_scores(index, some, held_terms, weights, groups)
            assert got[0].tolist() == terms_held(index, some, held_terms).tolist()
            assert got[1].tolist() == index.score_documents(some, weights, groups).tolist()
