"""Retrieval after the embedding of an Inject's searches: CPU time, in process.

``Inject`` computes the part of its searches that needs no vector (``Retriever.ahead``: the
scope filter and BM25, with the conversation's context terms for a follow-up) while the
model runs, and after the embedding only finishes them (``Retriever.finish``). This times,
per query, the thread CPU of ``search`` with the embedding given (every stage after the
model, BM25 included, as a steered search ran before) and of ``ahead`` and ``finish``
(with the store's caches made as cold as a server's after its model: the query is embedded
again, untimed, before each), for the LongMemEval questions alone and with the two
questions before each as context texts (weights 0.5, 0.25). Hits are checked equal.

The store: the LongMemEval user turns (5,432, cached embeddings, channel = session), padded
to ``--size`` with synthetic memories (the first half of one turn joined to the second half
of another, the normalised sum of their vectors as its vector), built in seconds; hnsw
answers from ``exact_threshold`` (5,000) on. Limit and search_limit 40 (an Inject's with
capture on).

Run:  .venv/bin/python -m bench.search_ahead [--size 10000] [--queries 300]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from collections.abc import Callable
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import TypeVar

import numpy as np

from bench import lme_data
from bench.agent_loop_replay import cpu_flags
from bench.lme_data import cached_embeddings, load_oracle, pooled_turns, questions
from bench.results import write_results
from bench.store_build import build_store
from sidecar.api.server_config import ServerConfig
from sidecar.app import App
from sidecar.embedding.config import EmbeddingConfig
from sidecar.retrieval.contract import SearchQuery
from sidecar.timing import Clock

T = TypeVar("T")
DEEP = 40


def cpu_us(func: Callable[[], T]) -> tuple[T, float]:
    start = time.thread_time_ns()
    out = func()
    return out, (time.thread_time_ns() - start) / 1000


def corpus(size: int, model: str) -> tuple[list[str], list[str], np.ndarray, list[str]]:
    """(ids, texts, vectors, channels): the user turns, then synthetic memories to ``size``."""
    turns = pooled_turns(load_oracle(), ("user",))[:size]
    texts = [t.content for t in turns]
    vectors = cached_embeddings(texts, "lme_turns_user", model)
    ids, channels = [t.id for t in turns], [t.session_id for t in turns]
    pairs = np.random.default_rng(size).integers(len(turns), size=(size - len(turns), 2))
    for n, (a, b) in enumerate(pairs.tolist()):
        texts.append(texts[a][: len(texts[a]) // 2] + " " + texts[b][len(texts[b]) // 2:])
        ids.append(f"pad-{n}")
        channels.append(f"pad-{n % 500}")
    pads = vectors[pairs[:, 0]] + vectors[pairs[:, 1]]
    pads /= np.linalg.norm(pads, axis=1, keepdims=True)
    return ids, texts, np.vstack([vectors, pads]).astype(np.float32), channels


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--size", type=int, default=10_000)
    parser.add_argument("--queries", type=int, default=300)
    args = parser.parse_args()
    model = EmbeddingConfig().model
    ids, texts, vectors, channels = corpus(args.size, model)
    asked = [q.text for q in questions(load_oracle())][: args.queries]
    times: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory(dir=lme_data.CACHE) as tmp:
        build_store(Path(tmp), ids, texts, vectors, model=model, channels=channels)
        app = App.open(ServerConfig(listen="127.0.0.1:0", data_dir=tmp))
        try:
            if app.vectors is not None:
                app.vectors.wait_ready(1800)
            engine = app.retriever
            engine.clock = lambda: Clock(time.thread_time_ns)  # type: ignore[attr-defined]
            for i, text in enumerate(asked):
                for kind, context in (("alone", ()), ("with context", (
                        (asked[i - 1], 0.5), (asked[i - 2], 0.25)))):
                    query = SearchQuery(text=text, limit=DEEP, search_limit=DEEP,
                                        context_texts=context)
                    embedding = engine.embed_query(text)
                    whole, spent = cpu_us(partial(engine.search,
                                                  replace(query, embedding=embedding)))
                    times.setdefault(f"{kind}: search after the model", []).append(spent)
                    times.setdefault(f"{kind}: its BM25", []).append(
                        whole.timings_us.get("lexical", 0))
                    ahead, spent = cpu_us(partial(engine.ahead, query))
                    times.setdefault(f"{kind}: ahead (beside the model)", []).append(spent)
                    engine.embed_query(text)  # the caches as the model leaves them
                    done, spent = cpu_us(partial(engine.finish, ahead, embedding))
                    times.setdefault(f"{kind}: finish (after the model)", []).append(spent)
                    assert [h.memory.id for h in done.hits] == [h.memory.id for h in whole.hits]
        finally:
            app.close()
    lines = [f"{args.size} memories, {len(asked)} questions, limit {DEEP}; thread CPU us "
             "p50 / p95", "", "| what | p50 | p95 |", "|---|---|---|"]
    lines += [f"| {name} | {np.percentile(v, 50):.0f} | {np.percentile(v, 95):.0f} |"
              for name, v in times.items()]
    lines.append(f"\nCPU {cpu_flags()}, load average {os.getloadavg()[0]:.1f}")
    print("\n".join(lines))
    print(f"results: {write_results('search_ahead', chr(10).join(lines))}")


if __name__ == "__main__":
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    main()
