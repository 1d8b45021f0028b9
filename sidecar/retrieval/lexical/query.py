"""Query building: a long query keeps only its rarest terms.

A turn of conversation used as a query can hold dozens of distinct terms; BM25 scores every
posting of every term, and the common ones (low idf) add little to the ranking but most of
the work. ``rarest`` keeps the ``max_terms`` distinct terms with the highest idf (ties: the
first to occur), every occurrence of each, and drops the rest.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def rarest(
    terms: Sequence[str], ids: np.ndarray, idf: np.ndarray, max_terms: int
) -> tuple[np.ndarray, np.ndarray]:
    """(ids, idf) of the query terms kept (all of them when ``max_terms`` is 0 or no fewer
    than the distinct terms)."""
    first: dict[str, float] = {}
    for term, weight in zip(terms, idf.tolist(), strict=True):
        first.setdefault(term, weight)
    if max_terms <= 0 or len(first) <= max_terms:
        return ids, idf
    ranked = sorted(first, key=lambda t: -first[t])  # stable: ties keep query order
    keep = set(ranked[:max_terms])
    mask = np.array([t in keep for t in terms], bool)
    return ids[mask], idf[mask]
