"""The contextual relevance floor on LongMemEval: evidence kept vs unrelated memories injected.

    .venv/bin/python bench/relevance_floor.py        # grid on the tune half, table on held-out

One store, as one agent: every user turn of every session of the oracle set is a memory
(5,432). Each of the 470 non-abstention questions is one turn: the real hybrid engine (default
RetrievalConfig, in process) searches ``search_limit`` (20) hits for the question, then the
injection floor (``sidecar.injection.floor``, the code Inject runs) decides which the block
carries. Per turn: items kept, unrelated items (from sessions that are not the question's own
conversation), and evidence recall (share of the question's ``has_answer`` user turns kept;
questions without one are left out of that mean). Floors are chosen on a fixed tune half of
the questions and reported on the other half and on all 470.
"""

from __future__ import annotations

import itertools
import os
import sys
from dataclasses import dataclass
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
sys.path.insert(0, str(Path(__file__).parent))

import numpy as np  # noqa: E402
from lme_data import CACHE, cached_embeddings, load_oracle, pooled_turns, questions  # noqa: E402
from store_build import build_store  # noqa: E402

from sidecar.embedding import Embedder, bundled_model_files  # noqa: E402
from sidecar.injection.config import MemoryInjectionConfig  # noqa: E402
from sidecar.injection.floor import Floor, passes  # noqa: E402
from sidecar.live import Live  # noqa: E402
from sidecar.retrieval.config import RetrievalConfig  # noqa: E402
from sidecar.retrieval.contract import Hit, SearchQuery  # noqa: E402
from sidecar.retrieval.hybrid import HybridRetriever  # noqa: E402
from sidecar.store.db import Database  # noqa: E402
from sidecar.store.repos import Repositories  # noqa: E402

SEED = 20261122
RELATIVE = (0.0, 0.6, 0.7, 0.75, 0.8, 0.85, 0.9)
SCORE = (0.0, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8)


@dataclass(frozen=True, slots=True)
class Turn:
    hits: list[Hit]
    own: frozenset[str]  # the question's own sessions
    evidence: frozenset[str]  # its has_answer turn ids in the store


@dataclass(frozen=True, slots=True)
class Row:
    items: float
    unrelated: float
    recall: float


def measure(turns: list[Turn], floor: Floor, max_total: int) -> Row:
    items, unrelated, recall = [], [], []
    for t in turns:
        kept = [h for h, ok in zip(t.hits, passes(t.hits, floor), strict=True) if ok][:max_total]
        items.append(len(kept))
        unrelated.append(sum(h.memory.id.split("#", 1)[0] not in t.own for h in kept))
        if t.evidence:
            recall.append(len({h.memory.id for h in kept} & t.evidence) / len(t.evidence))
    return Row(float(np.mean(items)), float(np.mean(unrelated)), float(np.mean(recall)))


def searched(config: MemoryInjectionConfig) -> tuple[list[Turn], list[int]]:
    """Every question's hits, and the indices of the tune half."""
    data = load_oracle()
    turns = pooled_turns(data, ("user",))
    vectors = cached_embeddings([t.content for t in turns], "lme_user")
    data_dir = CACHE / "lme_store_floor_user"
    build_store(data_dir, [t.id for t in turns], [t.content for t in turns], vectors)
    qs = questions(data)
    own = {str(q["question_id"]): frozenset(q["haystack_session_ids"]) for q in data}
    answers = {t.id for t in turns if t.has_answer}
    qvecs = cached_embeddings([q.text for q in qs], f"lme_q_{len(qs)}")
    db = Database(data_dir / "memsidecar.sqlite3")
    engine = HybridRetriever(Embedder(bundled_model_files()), Live.fixed(RetrievalConfig()))
    repos = Repositories.open(db)
    engine.load(repos.memories, repos.edges)
    out = []
    for q, v in zip(qs, qvecs, strict=True):
        hits = engine.search(SearchQuery(q.text, limit=config.search_limit, embedding=v,
                                         search_limit=config.search_limit)).hits
        evidence = frozenset(a for a in answers if a.split("#", 1)[0] in q.evidence_sessions)
        out.append(Turn(hits, own[q.id], evidence))
    db.close()
    order = np.random.default_rng(SEED).permutation(len(qs))
    print(f"{len(turns)} memories, {len(qs)} questions "
          f"({sum(1 for t in out if not t.evidence)} without an evidence turn)", file=sys.stderr)
    return out, sorted(int(i) for i in order[: len(qs) // 2])


def choose(tune: list[Turn], base: Floor, max_total: int) -> list[tuple[Floor, Row]]:
    """Every floor of the grid on the tune half; those that cut unrelated items by >= 40% and
    lose <= 0.02 of evidence recall first, by recall then fewest unrelated."""
    old = measure(tune, base, max_total)
    rows = [(f, measure(tune, f, max_total)) for f in (
        Floor(base.min_cosine, r, s) for r, s in itertools.product(RELATIVE, SCORE))]

    def ok(row: Row) -> bool:
        return row.unrelated <= 0.6 * old.unrelated and row.recall >= old.recall - 0.02

    return sorted(rows, key=lambda fr: (not ok(fr[1]), -fr[1].recall, fr[1].unrelated))


def table(title: str, turns: list[Turn], floors: list[tuple[str, Floor]],
          max_total: int) -> None:
    print(f"\n{title} ({len(turns)} turns):\n")
    print("| floor | relative_floor | score_floor | items / turn | unrelated / turn | "
          "evidence recall |")
    print("|---|---|---|---|---|---|")
    for name, f in floors:
        row = measure(turns, f, max_total)
        print(f"| {name} | {f.relative} | {f.score} | {row.items:.2f} | {row.unrelated:.2f} | "
              f"{row.recall:.3f} |")


def main() -> None:
    config = MemoryInjectionConfig()
    base = Floor(config.contextual_min_score)
    turns, tune_idx = searched(config)
    tune = [turns[i] for i in tune_idx]
    held = [t for i, t in enumerate(turns) if i not in set(tune_idx)]
    ranked = choose(tune, base, config.max_total)
    print("\ntune half, best 12 of the grid (absolute floor "
          f"{base.min_cosine}; first rows meet: unrelated -40%, recall -0.02 at most):\n")
    print("| relative_floor | score_floor | items | unrelated | recall |")
    print("|---|---|---|---|---|")
    for f, row in ranked[:12]:
        print(f"| {f.relative} | {f.score} | {row.items:.2f} | {row.unrelated:.2f} | "
              f"{row.recall:.3f} |")
    current = Floor(config.contextual_min_score, config.relative_floor, config.score_floor)
    floors = [("absolute only (0.25)", base), ("chosen on tune half", ranked[0][0]),
              ("configured defaults", current)]
    table("held-out half", held, floors, config.max_total)
    table("all questions", turns, floors, config.max_total)


if __name__ == "__main__":
    main()
