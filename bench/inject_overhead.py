"""What Inject costs besides the model: in-process, query embeddings computed beforehand.

Serves the cached padded store of the replay benchmark (``bench/.cache/replay_store_<size>``,
built by ``bench.replay_longmemeval``) through ``App``, and calls ``Injector.inject`` for the
user turns of the first replay questions (a fresh channel per pass), with an embedder (the
injector's and the retriever's) whose ``embed_one`` returns the precomputed vector. Prints
total and per-stage p50 / p90 in ms.

Run:  .venv/bin/python -m bench.inject_overhead --size 100000 [--passes 2] [--turns 400]
"""

from __future__ import annotations

import argparse
import time
from dataclasses import replace
from typing import Any

import numpy as np

from bench.lme import oracle
from bench.replay_longmemeval import cached_store, working_copy
from sidecar.api.server_config import ServerConfig
from sidecar.app import App
from sidecar.embedding import Embedder, bundled_model_files
from sidecar.injection.types import InjectRequest


class PrecomputedEmbedder:
    """``embed_one`` from a table; everything else (tokens) from the real embedder."""

    def __init__(self, embedder: Embedder, vectors: dict[str, np.ndarray]) -> None:
        self.embedder = embedder
        self.vectors = vectors

    def embed_one(self, text: str) -> np.ndarray:
        return self.vectors[text]

    def embed_query(self, text: str, max_tokens: int = 0) -> np.ndarray:
        return self.vectors[text]

    def is_parallel(self, text: str, max_tokens: int = 0) -> bool:
        return False  # nothing to wait for: BM25 overlaps the (instant) lookup

    def __getattr__(self, name: str) -> Any:
        return getattr(self.embedder, name)


def user_turns(limit: int) -> list[tuple[str, str]]:
    questions = [q for q in oracle()[:250] if len(q["haystack_sessions"]) >= 2]
    turns = [(q["question_id"], m["content"]) for q in questions
             for session in q["haystack_sessions"] for m in session
             if m["role"] == "user" and m["content"].strip()]
    return turns[:limit]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--passes", type=int, default=2)
    parser.add_argument("--turns", type=int, default=400)
    args = parser.parse_args()
    store = cached_store(args.size)
    embedder = Embedder(bundled_model_files())
    turns = user_turns(args.turns)
    fake = PrecomputedEmbedder(embedder, {t: embedder.embed_one(t) for _, t in turns})
    with working_copy(store) as data_dir:
        app = App.open(ServerConfig(listen="127.0.0.1:0", data_dir=str(data_dir)),
                       embedder=embedder)
        try:
            app.retriever.embedder = fake  # type: ignore[attr-defined]
            injector = replace(app.injector, embedder=fake)
            for n in range(args.passes):
                total: list[float] = []
                stages: dict[str, list[float]] = {}
                for qid, text in turns:
                    start = time.perf_counter_ns()
                    out = injector.inject(InjectRequest(agent_id=qid, channel_id=f"{qid}-{n}",
                                                        text=text, source="user"))
                    total.append((time.perf_counter_ns() - start) / 1e6)
                    for name, us in out.stats.stages_us.items():
                        stages.setdefault(name, []).append(us / 1000)
                print(f"pass {n} size {args.size}: total {np.median(total):.3f}/"
                      f"{np.percentile(total, 90):.3f} ms | " + ", ".join(
                          f"{k} {np.median(v):.3f}/{np.percentile(v, 90):.3f}"
                          for k, v in stages.items()), flush=True)
            injector.close()
        finally:
            app.close()


if __name__ == "__main__":
    from bench.results import recorded

    with recorded("inject_overhead"):
        main()
