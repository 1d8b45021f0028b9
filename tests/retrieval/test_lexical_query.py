"""A long query keeps its rarest terms: the pure rule, and BM25 through the index equals
rank-bm25 over the kept terms only."""

from __future__ import annotations

import numpy as np
import pytest
from rank_bm25 import BM25Okapi

from sidecar.retrieval.lexical.bm25 import BM25Index
from sidecar.retrieval.lexical.query import rarest

DOCS = {
    1: "deploy the billing service on tuesday",
    2: "the billing service failed on friday",
    3: "grandma grows tomatoes and basil",
    4: "the service deploy runs every tuesday",
    5: "tomatoes need water every morning",
    6: "postgres migration of the billing database",
}


def test_rarest_keeps_the_highest_idf_terms_and_every_occurrence() -> None:
    terms = ["service", "postgres", "service", "tuesday", "basil", "tuesday"]
    ids = np.arange(6)
    idf = np.array([0.2, 1.5, 0.2, 0.9, 1.5, 0.9])
    kept_ids, kept_idf = rarest(terms, ids, idf, 3)
    assert kept_ids.tolist() == [1, 3, 4, 5]  # postgres, basil (tie: query order), tuesday x2
    assert kept_idf.tolist() == [1.5, 0.9, 1.5, 0.9]
    assert rarest(terms, ids, idf, 2)[0].tolist() == [1, 4]
    for off in (0, 4, 10):  # 0 = no cap; a cap at or above the 4 distinct terms keeps all
        assert rarest(terms, ids, idf, off)[0].tolist() == ids.tolist()


@pytest.mark.parametrize("max_terms", [1, 2, 3])
def test_capped_query_scores_like_rank_bm25_on_the_kept_terms(max_terms: int) -> None:
    index = BM25Index(1.5, 0.5, 0.25)
    index.add(list(DOCS), list(DOCS.values()))
    query = "billing service deploy postgres tomatoes"
    labels = sorted(DOCS)
    ref = BM25Okapi([DOCS[i].split() for i in labels], k1=1.5, b=0.5, epsilon=0.25)
    terms = query.split()
    by_rarity = sorted(terms, key=lambda t: -ref.idf.get(t, 0.0))  # stable: query order
    kept = [t for t in terms if t in by_rarity[:max_terms]]
    expected = dict(zip(labels, ref.get_scores(kept).tolist(), strict=True))
    got_labels, got_scores = index.scores(query, max_terms)
    got = dict(zip(got_labels.tolist(), got_scores.tolist(), strict=True))
    for label in labels:
        assert got.get(label, 0.0) == pytest.approx(expected[label], abs=1e-6)
    assert len(got) < len(DOCS)  # the common terms' documents are no longer touched
    assert index.search(query, 10, max_terms=99)[0].tolist() == index.search(query, 10)[0].tolist()
