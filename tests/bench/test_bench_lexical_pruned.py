"""bench/lexical_pruned.py on a small index: both sides timed on every query, the same
answers (the bench raises otherwise), cold and warm."""

from __future__ import annotations

import numpy as np

from bench import lexical_pruned as bench

TEXTS = [line.strip() for path in sorted((bench.Path(bench.__file__).parent.parent / "docs")
                                         .glob("*.md"))
         for line in path.read_text(encoding="utf-8").splitlines() if len(line.strip()) > 40]
QUERIES = ["how is a cold scope loaded", "durable turn", "PostgreSQL change feed replica",
           "blocks pruned from the history of a channel", "what is the"]  # the last: no term


def test_both_sides_answer_every_query_alike() -> None:
    index = bench.index_of(TEXTS)
    assert len(index) == len(TEXTS)
    for k in (1, 20, 50):
        for trash in (None, np.ones(1000)):
            got = bench.measure(index, QUERIES, k, 2, trash)
            assert set(got) == {"pruned", "every posting"}
            assert len(got["pruned"]) == len(got["every posting"]) == 2 * (len(QUERIES) - 1)
