"""The contextual relevance floor: the rule on examples, and over a store of loose matches."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from memsidecar.v1 import memory_pb2, store_pb2

from sidecar.embedding import Embedder
from sidecar.injection.floor import BACKGROUND_MIN_MEMORIES, Floor, passes
from sidecar.retrieval.background import SAMPLE
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
BG = (0.1, 0.1, 1000)


def test_loose_matches_do_not_fill_the_block(serve: Serve) -> None:
    question = "Which database does the billing service use, PostgreSQL?"
    # absolute floor only
    absolute = serve(max_total=25, relative_floor=0.0, score_floor=0.0, background_floor=0.0)
    put(absolute, "The billing service uses PostgreSQL 16 as its database.")
    for text in LOOSE:
        put(absolute, text)
    wide = inject(absolute, question, channel="a")
    absolute.close()  # one server per data dir: the same store, reopened with the floors
    live = serve(relative_floor=0.85, score_floor=0.0, background_floor=0.0, max_total=25)
    narrow = inject(live, question, channel="b")
    assert len(wide.items) >= 15
    assert len(narrow.items) >= 1
    assert len(narrow.items) < len(wide.items) // 2  # the relative floor cuts over half
    assert "PostgreSQL 16" in narrow.items[0].content
    assert narrow.stats.below_min_score > wide.stats.below_min_score
    # exactly the wide block's items at or above 0.85 x its best cosine survive the floor
    best = max(item.cosine for item in wide.items)
    kept = [item.id for item in wide.items if item.cosine >= 0.85 * best - 1e-6]
    assert [item.id for item in narrow.items] == kept


def test_background_floor_and_the_relative_ones() -> None:
    # background (mean 0.1, spread 0.1, 1000 memories): 3 spreads above it is a cosine of 0.4
    assert passes(HITS, Floor(0.25, background=3.0), BG) == [True, True, True, False,
                                                                      False]
    # it is a bar every kept hit clears, like the absolute floor; the relative ones cut further
    assert passes(HITS, Floor(0.25, score=0.9, background=3.0), BG) == [
        True, False, True, False, False]
    assert passes(HITS, Floor(0.25, relative=0.85, background=3.0), BG) == [
        True, True, False, False, False]
    # below the absolute floor, the absolute floor holds
    assert passes(HITS, Floor(0.25, background=0.5), BG) == passes(HITS, Floor(0.25))
    assert passes(HITS, Floor(0.25), (0.9, 0.1, 1000)) == passes(HITS, Floor(0.25))  # off: unused
    # a small store's background is not used
    assert passes(HITS, Floor(0.25, background=3.0), (0.1, 0.1, 999)) == passes(HITS, Floor(0.25))


def test_background_floor_over_a_store_of_loose_matches(serve: Serve, embedder: Embedder) -> None:
    # one answer among loose matches, in a store above BACKGROUND_MIN_MEMORIES and within
    # the background's sample (so its figures are exact)
    loose = [f"{p} looked at {t} during sprint {n}." for n, (p, t) in
             enumerate(zip(PEOPLE * 127, THINGS * 203, strict=False))]
    texts = ["The billing service uses PostgreSQL 16 as its database.", *loose]
    question = "Which database does the billing service use, PostgreSQL?"
    absolute = serve(max_total=25, relative_floor=0.0, score_floor=0.0, background_floor=0.0)
    stored = absolute.store.ImportMemories(iter(
        store_pb2.UpsertMemoryRequest(memory=memory_pb2.Memory(
            content=t, type=memory_pb2.MEMORY_TYPE_FACT)) for t in texts)).stored
    assert BACKGROUND_MIN_MEMORIES <= stored == len(texts) <= SAMPLE
    wide = inject(absolute, question, channel="a")
    repo = absolute.server.app.memories.memories
    vectors = np.vstack([v for _, v in repo.iter_live_embeddings()])
    absolute.close()
    # the store's mean cosine to the question and its spread, computed here exactly; the bar
    # is put halfway between the wide block's two best distinct cosines below the top one, so
    # the case holds whatever numbers the model gives
    cosines = vectors @ embedder.embed_query(question, RetrievalConfig().query_max_tokens)
    mean, spread = float(cosines.mean()), float(cosines.std())
    ranked = sorted({round(item.cosine, 4) for item in wide.items}, reverse=True)
    assert len(ranked) >= 3 and ranked[1] > mean
    bar = (ranked[1] + ranked[2]) / 2
    live = serve(relative_floor=0.0, score_floor=0.0, background_floor=(bar - mean) / spread,
                 max_total=25)
    narrow = inject(live, question, channel="b")
    kept = [item.id for item in wide.items if item.cosine >= bar]
    assert [item.id for item in narrow.items] == kept
    assert 2 <= len(narrow.items) < len(wide.items)  # the bar cut the loose matches below it
    assert "PostgreSQL 16" in narrow.items[0].content
