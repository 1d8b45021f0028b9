"""Evidence for the contextual cosine floor: MiniLM cosines of related vs unrelated text.

Related: a LongMemEval question vs the user turns of its evidence session that carry the
answer (``has_answer``). Unrelated: the same question vs user turns of other questions.
Run: .venv/bin/python -m bench.experiments.cosine_floor [--model minilm-int8]
"""

from __future__ import annotations

import argparse
import random

import numpy as np

from bench.lme import oracle
from sidecar.embedding import Embedder
from sidecar.embedding.models import FP32, MODEL_NAMES, model_files


def main(questions: int = 200, seed: int = 7, model: str = FP32) -> None:
    data = oracle()
    rng = random.Random(seed)
    picked = rng.sample(data, questions)
    turns = [(q["question_id"], t["content"]) for q in data for s in q["haystack_sessions"]
             for t in s if t["role"] == "user"]
    embedder = Embedder(model_files(model))
    print(f"model {model}")
    related: list[float] = []
    unrelated: list[float] = []
    for q in picked:
        evidence = [t["content"] for s in q["haystack_sessions"] for t in s
                    if t["role"] == "user" and t.get("has_answer")]
        others = [c for qid, c in rng.sample(turns, 40) if qid != q["question_id"]][:10]
        if not evidence:
            continue
        vq = embedder.embed_one(q["question"])
        related.extend((embedder.embed(evidence) @ vq).tolist())
        unrelated.extend((embedder.embed(others) @ vq).tolist())
    r, u = np.array(related), np.array(unrelated)
    print(f"related   n={r.size:5d}  " + _pct(r))
    print(f"unrelated n={u.size:5d}  " + _pct(u))
    for floor in (0.15, 0.2, 0.25, 0.3, 0.35, 0.4):
        print(f"floor {floor:.2f}: keeps {np.mean(r >= floor):6.1%} of related, "
              f"{np.mean(u >= floor):6.1%} of unrelated")


def _pct(x: np.ndarray) -> str:
    p = np.percentile(x, [5, 25, 50, 75, 95, 99])
    return "p5 {:.3f} p25 {:.3f} p50 {:.3f} p75 {:.3f} p95 {:.3f} p99 {:.3f}".format(*p)


if __name__ == "__main__":
    from bench.results import recorded

    parser = argparse.ArgumentParser()
    parser.add_argument("--model", choices=MODEL_NAMES, default=FP32)
    with recorded("cosine_floor"):
        main(model=parser.parse_args().model)
