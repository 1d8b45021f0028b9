"""The contextual relevance floor: the rule on examples, and over a store of loose matches."""

from __future__ import annotations

from dataclasses import dataclass

from sidecar.embedding import Embedder
from sidecar.injection.floor import Floor, passes
from sidecar.retrieval.config import RetrievalConfig
from tests.injection.conftest import Serve
from tests.injection.helpers import inject, put


@dataclass(frozen=True)
class H:
    cosine: float
    score: float


HITS = [H(0.80, 0.030), H(0.70, 0.012), H(0.50, 0.029), H(0.30, 0.010), H(0.20, 0.031)]


def test_absolute_floor_only_when_relative_floors_are_off() -> None:
    assert passes(HITS, Floor(0.25)) == [True, True, True, True, False]
    assert passes([], Floor(0.25, 0.8, 0.5)) == []


def test_relative_cosine_or_relative_score() -> None:
    # best cosine 0.80 (x 0.85 = 0.68), best score 0.031 (x 0.9 = 0.0279)
    assert passes(HITS, Floor(0.25, relative=0.85)) == [True, True, False, False, False]
    assert passes(HITS, Floor(0.25, score=0.9)) == [True, False, True, False, False]
    assert passes(HITS, Floor(0.25, 0.85, 0.9)) == [True, True, True, False, False]
    # the absolute floor still holds for a hit with the best fused score
    assert not passes(HITS, Floor(0.25, 0.85, 0.9))[4]


PEOPLE = ("Ana", "Bo", "Chen", "Dara", "Eli", "Femi", "Gus", "Hana")
THINGS = ("a spreadsheet of invoices", "the service dashboard", "an old data export",
          "the billing team's wiki", "a customer table in staging")
LOOSE = [f"{p} looked at {t} during sprint {n}." for n, (p, t) in
         enumerate(zip(PEOPLE * 5, THINGS * 8, strict=True))]
Z = 0.6  # the bar falls among the loose matches


def test_loose_matches_do_not_fill_the_block(serve: Serve) -> None:
    question = "Which database does the billing service use, PostgreSQL?"
    absolute = serve(max_total=25, relative_floor=0.0, score_floor=0.0)  # absolute floor only
    put(absolute, "The billing service uses PostgreSQL 16 as its database.")
    for text in LOOSE:
        put(absolute, text)
    wide = inject(absolute, question, channel="a")
    absolute.close()  # one server per data dir: the same store, reopened with the floors
    live = serve(relative_floor=0.85, score_floor=0.0, max_total=25)
    narrow = inject(live, question, channel="b")
    assert len(wide.items) >= 15
    assert 1 <= len(narrow.items) < len(wide.items) // 2
    assert "PostgreSQL 16" in narrow.items[0].content
    assert narrow.stats.below_min_score > wide.stats.below_min_score
    # exactly the wide block's items at or above 0.85 x its best cosine survive the floor
    best = max(item.cosine for item in wide.items)
    kept = [item.id for item in wide.items if item.cosine >= 0.85 * best - 1e-6]
    assert [item.id for item in narrow.items] == kept


def test_background_floor_or_the_relative_ones() -> None:
    # background (mean 0.1, spread 0.1): 4 spreads above it is a cosine of 0.5
    assert passes(HITS, Floor(0.25, background=4.0), (0.1, 0.1)) == [True, True, True, False,
                                                                      False]
    assert passes(HITS, Floor(0.25, score=0.9, background=4.0), (0.1, 0.1)) == [
        True, True, True, False, False]
    assert passes(HITS, Floor(0.25, relative=0.85, background=6.0), (0.1, 0.1)) == [
        True, True, False, False, False]
    assert passes(HITS, Floor(0.25, background=1.0), (0.1, 0.1))[3]  # 0.30 >= 0.2
    assert passes(HITS, Floor(0.25), (0.9, 0.1)) == passes(HITS, Floor(0.25))  # off: unused


def test_background_floor_over_a_store_of_loose_matches(serve: Serve, embedder: Embedder) -> None:
    texts = ["The billing service uses PostgreSQL 16 as its database.", *LOOSE]
    question = "Which database does the billing service use, PostgreSQL?"
    absolute = serve(max_total=25, relative_floor=0.0, score_floor=0.0)
    for text in texts:
        put(absolute, text)
    wide = inject(absolute, question, channel="a")
    absolute.close()
    live = serve(relative_floor=0.0, score_floor=0.0, background_floor=Z, max_total=25)
    narrow = inject(live, question, channel="b")
    # the bar: the store's mean cosine to the question + Z standard deviations, exactly
    cosines = embedder.embed(texts) @ embedder.embed_query(
        question, RetrievalConfig().query_max_tokens)
    bar = float(cosines.mean() + Z * cosines.std())
    kept = [item.id for item in wide.items if item.cosine >= bar - 1e-5]
    assert [item.id for item in narrow.items] == kept
    assert 3 <= len(narrow.items) < len(wide.items) // 2
    assert "PostgreSQL 16" in narrow.items[0].content
