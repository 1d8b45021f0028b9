"""The reply vote's store-wide search as the store grows: every posting of the query's terms
(``BM25Index.search_weighted``, what ``Retriever.term_search`` reads) against the rarest terms
within the focus's postings budget (``lexical.held.rare_search``, what
``Retriever.term_search_within`` reads, ``focus.WIDE_POSTINGS``).

Builds a BM25 index (the default analyser) of CoQA story sentences, the whole set repeated
until the index holds ``--sizes`` documents (every term's document frequency grows with the
store), and times the two searches for the reply votes of CoQA conversations (each turn's
question at weight 1 and its gold answer at 2, the top ``focus.WIDE``), interleaved call by
call: p50/p99 microseconds per size, and the share of calls whose top lists differ
(``bench/results/reply_wide_search.md``).

    .venv/bin/python -m bench.reply_wide_search --data ../shared/data/coqa_dev.json
        [--sizes 10000 100000 400000] [--conversations 100]
"""

from __future__ import annotations

import argparse
import json
import os
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from bench.agent_loop_replay import cpu_flags
from bench.conversation_followups import split_sentences
from bench.results import recorded
from sidecar.conversation.focus import WIDE, WIDE_POSTINGS
from sidecar.retrieval.config import RetrievalConfig
from sidecar.retrieval.lexical.bm25 import BM25Index, term_weights
from sidecar.retrieval.lexical.held import rare_search
from sidecar.retrieval.lexical.tokenize import Analyzer


def stories(data: dict) -> list[str]:  # type: ignore[type-arg]
    """Every sentence of every story."""
    return [item["story"][a:b] for item in data["data"]
            for a, b in split_sentences(item["story"])]


def votes(data: dict, conversations: int) -> list[dict[str, float]]:  # type: ignore[type-arg]
    """The weighted terms of each turn's reply vote (question 1, answer 2)."""
    analyzer = Analyzer(RetrievalConfig().bm25_stemming)
    out = []
    for item in data["data"][:conversations]:
        for q, a in zip(item["questions"], item["answers"], strict=True):
            weights = term_weights(analyzer, ((q["input_text"], 1.0), (a["input_text"], 2.0)))
            if weights:
                out.append(weights)
    return out


def index_of(sentences: list[str], size: int) -> BM25Index:
    index = BM25Index(background_merge=False, analyzer=Analyzer(RetrievalConfig().bm25_stemming))
    for start in range(0, size, 8192):
        labels = list(range(start + 1, min(size, start + 8192) + 1))
        index.add(labels, [sentences[(label - 1) % len(sentences)] for label in labels],
                  bulk=True)
    index.merge()
    return index


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000, 400_000])
    parser.add_argument("--conversations", type=int, default=100)
    args = parser.parse_args(argv)
    data = json.loads(args.data.read_text(encoding="utf-8"))
    sentences, asked = stories(data), votes(data, args.conversations)
    print(f"| documents | calls | all postings p50 / p99 us | within {WIDE_POSTINGS} p50 / "
          "p99 us | top lists differ |\n|---|---|---|---|---|")
    for size in args.sizes:
        index = index_of(sentences, size)
        spent: dict[str, list[float]] = {"all": [], "within": []}
        differ = 0
        for n, weights in enumerate(asked):
            found = {}
            for name in (("all", "within") if n % 2 else ("within", "all")):
                start = time.perf_counter()
                found[name] = (index.search_weighted(weights, WIDE) if name == "all"
                               else rare_search(index, weights, WIDE, WIDE_POSTINGS))
                spent[name].append((time.perf_counter() - start) * 1e6)
            differ += found["all"][0].tolist() != found["within"][0].tolist()
        (a50, a99), (w50, w99) = (np.percentile(spent[k], [50, 99]) for k in ("all", "within"))
        print(f"| {size:,} | {len(asked)} | {a50:.0f} / {a99:.0f} | {w50:.0f} / {w99:.0f} | "
              f"{differ / len(asked):.3f} |")
    print(f"CPU {cpu_flags()}, load average {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    with recorded("reply_wide_search"):
        main()
