"""Can concurrent queries share one run of the model? Exactness and CPU cost of batching.

Each variant embeds batches of texts in one onnxruntime run (one intra-op thread) and is
compared with the vector each text gets alone (``Embedder.embed_tokens``, the query path):

- ``minilm-int8`` as shipped, padded batches; and batches of texts of one token length (no
  padding): its activation scales span the batch;
- the graphs of ``bench.embed_batch_graphs``: per-text quantisation; and per-text
  quantisation and softmax sums;
- ``minilm-fp32``, padded batches, against its own single vectors.

Texts: the golden texts (``tests/embedding/golden/``) and the LongMemEval questions, in
seeded random batches of 2-16. Exactness: rows, rows bit-identical, lowest cosine. Cost: thread
CPU time (it moves much less with the machine's load than wall time) per text of one run of B
texts against B runs of one, on the shipped int8 graph's session as the server opens it (also
the shipped int8 graph batched, not exact, and the fp32 graph batched, exact but with fp32's
vectors: what batching could save at best); texts of exactly 16 / 32 / 64 model tokens, and
LongMemEval questions (mixed lengths).

Run:  .venv/bin/python -m bench.embed_batching [--batches 40] [--rounds 8]
"""

from __future__ import annotations

import argparse
import os
import random
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from bench.embed_batch_graphs import build
from bench.embed_variants import text_of
from bench.lme_data import load_oracle, questions
from bench.results import recorded
from sidecar.embedding import Embedder
from sidecar.embedding.models import FP32, INT8, model_files
from sidecar.embedding.onnx import QueryTokens, _session, pooled
from tests.embedding.golden import texts as golden_texts

SIZES = (2, 4, 8, 16)
Run = Callable[[np.ndarray, np.ndarray], np.ndarray]  # (ids, mask) -> unit vectors


def padded(tokens: Sequence[QueryTokens]) -> tuple[np.ndarray, np.ndarray]:
    """One batch: ids and masks of ``tokens`` padded with zeros to the longest."""
    width = max(t.length for t in tokens)
    ids, mask = (np.zeros((len(tokens), width), np.int64) for _ in range(2))
    for row, t in enumerate(tokens):
        ids[row, : t.length], mask[row, : t.length] = t.ids[0], t.mask[0]
    return ids, mask


def runner(path: Path, level: str) -> Run:
    session = _session(str(path), 1, level)

    def run(ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        return pooled(session.run(None, feeds)[0], mask)

    return run


def mixed_batches(tokens: list[QueryTokens], count: int, seed: int,
                  size: int = 0) -> list[list[QueryTokens]]:
    """Random batches of ``size`` texts (0: of one of ``SIZES``, at random)."""
    rng = random.Random(seed)
    return [rng.sample(tokens, size or rng.choice(SIZES)) for _ in range(count)]


def one_length_batches(tokens: list[QueryTokens], count: int,
                       seed: int) -> list[list[QueryTokens]]:
    """Batches of texts that have the same token length (no padding)."""
    groups: dict[int, list[QueryTokens]] = {}
    for t in tokens:
        groups.setdefault(t.length, []).append(t)
    usable = [g for g in groups.values() if len(g) >= 2]
    rng = random.Random(seed)
    out = []
    for _ in range(count):
        group = rng.choice(usable)
        out.append(rng.sample(group, min(len(group), rng.choice(SIZES))))
    return out


def same_length_share(tokens: list[QueryTokens], queued: int, draws: int = 2000) -> float:
    """Of ``queued`` random texts, the share that have the same token length as another."""
    rng = random.Random(queued)
    shared = 0
    for _ in range(draws):
        lengths = Counter(t.length for t in rng.sample(tokens, queued))
        shared += sum(n for n in lengths.values() if n > 1)
    return shared / (draws * queued)


def exactness(run: Run, single: Callable[[QueryTokens], np.ndarray],
              batches: list[list[QueryTokens]]) -> str:
    rows = same = 0
    worst = 1.0
    for batch in batches:
        for tokens, vector in zip(batch, run(*padded(batch)), strict=True):
            alone = single(tokens)
            rows += 1
            same += int(np.array_equal(vector, alone))
            worst = min(worst, float(vector @ alone))
    return f"{rows} | {same} ({same / rows:.0%}) | {worst:.6f}"


def cpu_ms(work: Callable[[], object], rounds: int) -> float:
    """Median thread CPU milliseconds of ``work``."""
    work()
    spent = []
    for _ in range(rounds):
        start = time.thread_time()
        work()
        spent.append(time.thread_time() - start)
    return 1000 * float(np.median(spent))


def cost_row(label: str, batches: list[list[QueryTokens]], runs: dict[str, Run],
             single: Run, rounds: int) -> str:
    """CPU ms per text: B single runs vs one run of each batched variant, summed over
    ``batches``."""
    texts = sum(len(b) for b in batches)

    def one_by_one(batch: list[QueryTokens]) -> Callable[[], object]:
        return lambda: [single(t.ids, t.mask) for t in batch]

    def at_once(run: Run, batch: list[QueryTokens]) -> Callable[[], object]:
        feeds = padded(batch)
        return lambda: run(*feeds)

    alone = sum(cpu_ms(one_by_one(b), rounds) for b in batches) / texts
    cells = [f"{alone:.2f}"]
    for run in runs.values():
        ms = sum(cpu_ms(at_once(run, b), rounds) for b in batches) / texts
        cells.append(f"{ms:.2f} ({ms / alone:.0%})")
    return f"| {label} | " + " | ".join(cells) + " |"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--batches", type=int, default=40, help="random batches per variant")
    parser.add_argument("--rounds", type=int, default=8, help="timed runs per cost cell")
    args = parser.parse_args()
    int8, fp32 = model_files(INT8, verify=True), model_files(FP32, verify=True)
    alone8, alone32 = Embedder(int8), Embedder(fp32)
    texts = golden_texts() + [q.text for q in questions(load_oracle())]
    tokens = [alone8.tokenize_query(t) for t in texts]
    mixed = mixed_batches(tokens, args.batches, 1)
    even = one_length_batches(tokens, args.batches, 2)
    load = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as scratch:
        graphs = build(int8.onnx, Path(scratch))
        shipped = runner(int8.onnx, "all")
        runs = {name: runner(path, "disabled") for name, path in graphs.items()}
        print(f"{len(texts)} texts; {args.batches} batches of {SIZES} per row; load average "
              f"{load:.2f} on {os.cpu_count()} cores\n")
        asked = tokens[len(golden_texts()):]
        print("LongMemEval questions queued at once, the share with the token length of another: "
              + ", ".join(f"{q}: {same_length_share(asked, q):.0%}" for q in (4, 8, 16)) + "\n")
        print("| batched run | texts | bit-identical to alone | lowest cosine |\n|---|---|---|---|")
        rows = [(f"{INT8} as shipped, padded", shipped, alone8.embed_tokens, mixed),
                (f"{INT8} as shipped, one length per batch", shipped, alone8.embed_tokens, even),
                *[(f"{name}, padded", run, alone8.embed_tokens, mixed)
                  for name, run in runs.items()],
                *[(f"{name}, one length per batch", run, alone8.embed_tokens, even)
                  for name, run in runs.items()],
                (f"{FP32}, padded (vs fp32 alone)", runner(fp32.onnx, "all"),
                 alone32.embed_tokens, mixed)]
        for label, run, single, batches in rows:
            print(f"| {label} | {exactness(run, single, batches)} |")
        print("\nCPU ms per text (thread time, median of rounds): one text per run "
              f"({INT8} as shipped) vs one run per batch; the first two batched columns do "
              f"not give {INT8}'s vectors (above)\n")
        runs = {f"{INT8} as shipped": shipped, f"{FP32} (other vectors)": rows[-1][1], **runs}
        print("| texts | alone | " + " | ".join(runs) + " |\n|---|---|" + "---|" * len(runs))
        for n in (16, 32, 64):
            one = alone8.tokenize_query(text_of(alone8, n))
            for size in (1, *SIZES):
                print(cost_row(f"{n} tokens x {size}", [[one] * size], runs, shipped,
                               args.rounds))
        for size in SIZES:
            batches = mixed_batches(tokens[len(golden_texts()):], 6, 10 + size, size)
            print(cost_row(f"LongMemEval questions x {size}", batches, runs, shipped,
                           args.rounds))
    print(f"\nload average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    with recorded("embed_batching"):
        main()
