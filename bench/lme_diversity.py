"""The channel-diversity grid of ``longmemeval_quality.py --tune-diversity``: ``[retrieval]
channel_diversity`` over the store whose memories carry their session as ``channel_id``, in
process over the real engine with precomputed query embeddings, every other knob at its
default. The share is chosen on the tune half only, by a fixed rule: the most session
recall@10 whose turn recall@10 and turn MRR stay within ``SLACK`` of no diversity. The
held-out half is printed for every share, never used to choose."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from lme_data import Question
from lme_engine import InProcess
from lme_metrics import Scores

from sidecar.embedding import Embedder
from sidecar.retrieval.config import RetrievalConfig

Evaluate = Callable[[dict[str, list[str]], list[Question]], tuple[Scores, Scores]]
SHARES = (0.0, 0.02, 0.03, 0.05, 0.07, 0.1, 0.15, 0.2, 0.3, 1.0)
SLACK = 0.005


def chosen(rows: list[tuple[float, Scores, Scores]]) -> float:
    """The tune half's pick (rows: share, turn scores, session scores; share 0 first)."""
    _, t0, _ = rows[0]
    fit = [(s.r10, -share, share) for share, t, s in rows
           if t.r10 >= t0.r10 - SLACK and t.mrr >= t0.mrr - SLACK]
    return max(fit)[2]


def tune_diversity(data_dir: Path, embedder: Embedder, model: str, tune_half: list[Question],
                   held: list[Question], evaluate: Evaluate) -> None:
    engine = InProcess(data_dir, embedder, model, tune_half + held)

    def run(share: float, qs: list[Question]) -> tuple[Scores, Scores]:
        return evaluate(engine.ranked(replace(RetrievalConfig(), channel_diversity=share), qs),
                        qs)

    rows = [(share, *run(share, tune_half)) for share in SHARES]
    pick = chosen(rows)
    for title, part in (("tune half", None), ("held-out half", held)):
        print(f"\nchannel_diversity, HYBRID, {title} (chosen on the tune half: {pick}):\n")
        print("| channel_diversity | turn R@5 | turn R@10 | turn MRR | session R@10 "
              "| session hit@5 |\n|---|---|---|---|---|---|")
        for share, t, s in rows if part is None else [(x, *run(x, part)) for x in SHARES]:
            mark = " (chosen)" if share == pick else ""
            print(f"| {share}{mark} | {t.r5:.3f} | {t.r10:.3f} | {t.mrr:.3f} | {s.r10:.3f} "
                  f"| {s.hit5:.3f} |")
    engine.close()
