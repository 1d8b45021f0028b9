"""The fusion grid of ``longmemeval_quality.py --tune-fusion``: RRF vs normalised score fusion
(min-max / z-score x lexical_share x search_limit), in process over the real engine with
precomputed query embeddings. Settings are ranked on the tune half only; the held-out half is
printed for the tune half's best few and for RRF, never used to choose."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from lme_data import Question
from lme_engine import InProcess
from lme_metrics import Scores

from sidecar.embedding import Embedder
from sidecar.retrieval.config import NORMALISATIONS, RRF, SCORES, RetrievalConfig
from sidecar.retrieval.contract import Mode

Evaluate = Callable[[dict[str, list[str]], list[Question]], tuple[Scores, Scores]]
SHARES = (0.3, 0.5, 0.6, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95)
LIMITS = (20, 40)


def grid(base: RetrievalConfig) -> list[RetrievalConfig]:
    configs = [replace(base, fusion=RRF, search_limit=n) for n in LIMITS]
    for norm in NORMALISATIONS:
        for share in SHARES:
            configs += [replace(base, fusion=SCORES, score_normalisation=norm,
                                lexical_share=share, search_limit=n) for n in LIMITS]
    return configs


def label(c: RetrievalConfig) -> str:
    if c.fusion == RRF:
        return f"rrf k={c.rrf_k:g} lexical_weight={c.lexical_weight} search_limit={c.search_limit}"
    return f"scores {c.score_normalisation} lexical_share={c.lexical_share} " \
           f"search_limit={c.search_limit}"


def tune_fusion(data_dir: Path, embedder: Embedder, model: str, tune_half: list[Question],
                held: list[Question], evaluate: Evaluate) -> None:
    engine = InProcess(data_dir, embedder, model, tune_half + held)

    def run(cfg: RetrievalConfig, qs: list[Question]) -> tuple[Scores, Scores]:
        return evaluate(engine.ranked(cfg, qs), qs)

    lexical = evaluate(engine.ranked(RetrievalConfig(), tune_half, Mode.LEXICAL), tune_half)
    print(f"\nTune half, LEXICAL alone: turn R@10 {lexical[0].r10:.3f}, session R@10 "
          f"{lexical[1].r10:.3f}, turn MRR {lexical[0].mrr:.3f}\n")
    print("| fusion (tune half) | turn R@5 | turn R@10 | turn MRR | session R@10 |\n"
          "|---|---|---|---|---|")
    results = []
    for cfg in grid(RetrievalConfig()):
        t, s = run(cfg, tune_half)
        results.append((t.r10 + s.r10 + t.mrr, cfg))
        print(f"| {label(cfg)} | {t.r5:.3f} | {t.r10:.3f} | {t.mrr:.3f} | {s.r10:.3f} |")
    best = [cfg for _, cfg in sorted(results, key=lambda r: -r[0])[:5]]
    print("\nHeld-out half, the tune half's best 5 (by turn R@10 + session R@10 + turn MRR) "
          "and RRF:\n")
    print("| fusion (held-out half) | turn R@5 | turn R@10 | turn MRR | session R@10 |\n"
          "|---|---|---|---|---|")
    for cfg in [*best, RetrievalConfig(fusion=RRF)]:
        t, s = run(cfg, held)
        print(f"| {label(cfg)} | {t.r5:.3f} | {t.r10:.3f} | {t.mrr:.3f} | {s.r10:.3f} |")
    engine.close()
