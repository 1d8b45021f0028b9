"""What a held memory costs in the indexes, against the estimate the resident budget counts.

Feeds the sentences of CoQA stories (real text; one memory each, random unit vectors: the
bytes do not depend on what the vectors mean) into a retrieval engine as user scopes of
``--per-scope`` memories, measures the Python heap the indexes grew by (tracemalloc: the
mirror's records and columns, the dense vectors, the BM25 postings and statistics, the scope
bookkeeping), and prints it per memory beside ``ScopeMembers.size``'s estimate; then evicts
every scope and reports what stays. The hnsw graph (above ``exact_threshold`` held memories)
lives outside the Python heap and is not counted here: about 4 x 2 x hnsw_m bytes per
memory plus its own copy of the vector.

    .venv/bin/python -m bench.resident_bytes --data ../shared/data/coqa_dev.json [--memories 20000]
"""

from __future__ import annotations

import argparse
import gc
import json
import re
import tracemalloc
from pathlib import Path

import numpy as np

from bench.results import recorded
from sidecar.records import Memory, MemoryType
from sidecar.retrieval.hybrid import HybridRetriever
from sidecar.retrieval.resident.keys import scope_of
from sidecar.retrieval.vector.exact import DenseVectors

DIM = 384


def sentences(path: Path, n: int) -> list[str]:
    out: list[str] = []
    for item in json.loads(path.read_text(encoding="utf-8"))["data"]:
        out += [s.strip() for s in re.split(r"(?<=[.!?])\s+", item["story"]) if s.strip()]
    return (out * (n // max(len(out), 1) + 1))[:n]


def memories(texts: list[str], per_scope: int) -> list[Memory]:
    return [Memory(id=f"m{i}", content=t, type=MemoryType.FACT, importance=0.6, created_at=i,
                   updated_at=i, last_accessed_at=0, access_count=0, source="bench",
                   channel_id="", agent_id="agent-0", forgotten=False, version=1, seq=i + 1,
                   user_id=f"user-{i // per_scope}") for i, t in enumerate(texts)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, required=True, help="CoQA json (coqa_dev.json)")
    parser.add_argument("--memories", type=int, default=20_000)
    parser.add_argument("--per-scope", type=int, default=100)
    args = parser.parse_args()
    held = memories(sentences(args.data, args.memories), args.per_scope)
    rng = np.random.default_rng(0)
    vectors = rng.standard_normal((len(held), DIM)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    engine = HybridRetriever(None, vectors=DenseVectors(DIM))  # type: ignore[arg-type]
    estimate = sum(engine.scope_rows.size(m) for m in held)
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    for at in range(0, len(held), args.per_scope):
        engine.memories_stored(held[at:at + args.per_scope], vectors[at:at + args.per_scope])
    engine.lexical.merge()
    gc.collect()
    grown = tracemalloc.get_traced_memory()[0] - before
    for key in {scope_of(m) for m in held}:
        engine.loader.evict(key)  # what eviction frees
    engine.lexical.merge()
    gc.collect()
    kept = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    n = len(held)
    mean_chars = sum(len(m.content) for m in held) / n
    with recorded("resident_bytes"):
        print(f"{n} memories in {n // args.per_scope} scopes of {args.per_scope}, "
              f"{mean_chars:.0f} characters on average, dim {DIM}\n")
        print("| measure | bytes per memory |\n|---|---|")
        print(f"| held (Python heap: mirror, dense vectors, BM25, bookkeeping) | {grown / n:.0f} |")
        print(f"| estimate counted against resident_mb (ScopeMembers.size) | {estimate / n:.0f} |")
        print(f"| left after every scope was evicted | {kept / n:.0f} |")


if __name__ == "__main__":
    main()
