"""The lexical top k, pruned (``lexical.pruned``, MaxScore) against every posting scored, query
by query in one process, interleaved.

    .venv/bin/python bench/lexical_pruned.py [--memories 10000] [--k 10 20 30 50]

Corpus: the first ``--memories`` LongMemEval turns (user and assistant, as
``retrieval_vs_txtai.py``) in one ``BM25Index`` (default ``[retrieval]`` k1, b, stemming),
merged into one segment; queries: the 470 LongMemEval questions. Each query is analysed once
(its term ids and idf, ``BM25Index._query``); then, which goes first alternating, the pruned
top k and the exhaustive one (``_exhaustive``: today's reference) are timed with
``time.perf_counter``: warm (one after the other), and cold (a 32 MB array summed before
each, as the vector search and the model leave the caches in a search). Without a filter,
and with the scope filters of a mirror (``LiveMemories``) over the same labels: one viewer
of a user (the shared memories and theirs) and of one type (``FILTERS``; the share each
offers is printed), the pruned side given the filter's visibility columns as ``LexicalSource`` gives
them, the exhaustive side the filter function. Checks that both give
the same labels and the same float scores; prints p50/p99 per k and the ratio, with the load
average and CPU flags. Past ``pruned.MAX_K`` the index scores every posting (the row says
so): a k above it shows what pruning would cost there with ``--past-max-k``.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

import numpy as np  # noqa: E402
from lme_data import load_oracle, pooled_turns, questions  # noqa: E402

from kernels.warmup import warm_up_all  # noqa: E402
from sidecar.records import Memory, MemoryType, Viewer  # noqa: E402
from sidecar.retrieval.config import RetrievalConfig  # noqa: E402
from sidecar.retrieval.contract import Accept  # noqa: E402
from sidecar.retrieval.lexical import pruned  # noqa: E402
from sidecar.retrieval.lexical.bm25 import BM25Index  # noqa: E402
from sidecar.retrieval.lexical.tokenize import Analyzer  # noqa: E402
from sidecar.retrieval.mirror import LiveMemories, Visibility  # noqa: E402

Query = tuple[Any, np.ndarray, np.ndarray]  # BM25Index._query: (view, term ids, idf)


# Viewers of the mirror ``scopes`` builds: (name, viewer, types).
FILTERS = [
    ("a user's view (shared + theirs)", Viewer("a", "u1"), ()),
    ("one type (1 in 10)", Viewer("a", "u1"), (MemoryType.DECISION,)),
]


def scopes(n: int) -> LiveMemories:
    """Memories 1..n: every 10th a decision, the rest facts; a third private to one of three
    users of agent "a" (so a user's view offers ~78 %)."""
    memories = [Memory(id=f"m{seq}", content="", importance=0.5, created_at=0, updated_at=0,
                       last_accessed_at=0, access_count=0, source="", channel_id="",
                       type=MemoryType.DECISION if seq % 10 == 0 else MemoryType.FACT,
                       agent_id="a" if seq % 3 == 0 else "", forgotten=False, version=1,
                       seq=seq, user_id=f"u{seq % 9 // 3}" if seq % 3 == 0 else "")
                for seq in range(1, n + 1)]
    live = LiveMemories(capacity=n + 1)
    live.put(memories)
    return live


def cpu_flags() -> str:
    text = Path("/proc/cpuinfo").read_text(encoding="utf-8") if Path("/proc/cpuinfo").exists() \
        else ""
    found = {f for f in text.split() if f in ("avx2", "fma") or f.startswith("avx512")}
    return " ".join(sorted(found)) or "unknown"


def index_of(texts: list[str]) -> BM25Index:
    c = RetrievalConfig()
    index = BM25Index(c.bm25_k1, c.bm25_b, c.bm25_epsilon, background_merge=False,
                      analyzer=Analyzer(c.bm25_stemming))
    index.add(list(range(1, len(texts) + 1)), texts, bulk=True)
    index.merge()
    return index


def measure(index: BM25Index, texts: list[str], k: int, rounds: int,
            trash: np.ndarray | None, accept: Accept | None = None,
            columns: Visibility | None = None) -> dict[str, list[float]]:
    """Per side, the microseconds of each call; raises if the two differ."""
    queries = [q for q in (index._query(index.analyzer.query_terms(t)) for t in texts)
               if q is not None]
    sides: dict[str, Callable[[Query], tuple[np.ndarray, np.ndarray]]] = {
        "pruned": lambda q: index._top(q, k, accept, columns),
        "every posting": lambda q: index._exhaustive(q[0], q[1], q[2], k, accept)}
    out: dict[str, list[float]] = {name: [] for name in sides}
    for r in range(rounds):
        for i, query in enumerate(queries):
            names = list(sides) if (i + r) % 2 == 0 else list(sides)[::-1]
            found = {}
            for name in names:
                if trash is not None:
                    trash.sum()
                start = time.perf_counter()
                found[name] = sides[name](query)
                out[name].append((time.perf_counter() - start) * 1e6)
            a, b = found.values()
            if a[0].tolist() != b[0].tolist() or a[1].tolist() != b[1].tolist():
                raise AssertionError(f"the pruned top {k} differs on query {i}")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--memories", type=int, default=10_000)
    parser.add_argument("--k", type=int, nargs="+", default=[10, 20, 30, 50])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--no-filters", action="store_true", help="the unfiltered rows only")
    parser.add_argument("--past-max-k", action="store_true",
                        help="prune at every k (pruned.MAX_K lifted), to see where it pays")
    args = parser.parse_args()
    if args.past_max_k:
        pruned.MAX_K = max(args.k)
    data = load_oracle()
    texts = [t.content for t in pooled_turns(data, ("user", "assistant"))[: args.memories]]
    asked = [q.text for q in questions(data)]
    index = index_of(texts)
    warm_up_all()
    trash = np.ones(4_000_000)
    load_before = os.getloadavg()
    live = scopes(len(texts))
    labels = np.arange(1, len(texts) + 1, dtype=np.int64)
    filters: list[tuple[str, Accept | None, Visibility | None]] = [("none", None, None)]
    for name, viewer, types in [] if args.no_filters else FILTERS:
        offered = live.filter(viewer, types)
        share = float(offered(labels).mean())
        filters.append((f"{name}: {share:.0%}", offered, live.visibility(viewer, types)))
    print("| filter | k | caches | pruned p50 / p99 us | every posting p50 / p99 us | p50 ratio |")
    print("|---|---|---|---|---|---|")
    for name, accept, columns in filters:
        for k in args.k:
            for caches, flush in (("warm", None), ("cold", trash)):
                got = measure(index, asked, k, args.rounds, flush, accept, columns)
                p = {side: (np.percentile(v, 50), np.percentile(v, 99))
                     for side, v in got.items()}
                path = "" if k <= pruned.MAX_K else " (> MAX_K: every posting)"
                print(f"| {name} | {k}{path} | {caches} | {p['pruned'][0]:.1f} / "
                      f"{p['pruned'][1]:.1f} | {p['every posting'][0]:.1f} / "
                      f"{p['every posting'][1]:.1f} | "
                      f"{p['pruned'][0] / p['every posting'][0]:.2f}x |")
    print(f"\n{len(texts):,} memories, {len(asked)} queries x {args.rounds} rounds, the same "
          f"labels and scores on every query; load average {load_before[0]:.2f} before, "
          f"{os.getloadavg()[0]:.2f} after; CPU flags: {cpu_flags()}")


if __name__ == "__main__":
    from results import recorded  # bench/ is on sys.path

    with recorded("lexical_pruned"):
        main()
