"""Single-query embedding latency of each model variant by token length, in one run.

Variants: ``minilm-fp32`` (the packaged graph) and ``minilm-int8`` (integer MatMuls, built by
``make install``), each at onnxruntime graph optimisation levels basic / extended / all, and
loaded from a saved "all"-optimised file with optimisation off. One intra-op thread (the
server's default for a short query). Texts of exactly 16, 64, 128 and 256 model tokens
(with [CLS] and [SEP]), rounds interleaved across the variants so they see the same load.
Also prints each variant's cosine to the fp32 vector of the same text.

Run:  .venv/bin/python -m bench.embed_variants [--rounds 200]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

from bench.results import recorded
from sidecar.embedding import Embedder
from sidecar.embedding.models import FP32, MODEL_NAMES, model_files
from sidecar.embedding.onnx import save_optimized

LENGTHS = (16, 64, 128, 256)
LEVELS = ("basic", "extended", "all")
WORDS = ("memory sidecar agents recall the deployment notes about postgres tuning and the "
         "budget for tokens while users ask questions on weekends").split()


def text_of(embedder: Embedder, tokens: int) -> str:
    """A text of exactly ``tokens`` model tokens with [CLS] and [SEP]."""
    words: list[str] = []
    i = 0
    while embedder.count_tokens(" ".join(words)) < tokens - 2:
        words.append(WORDS[i % len(WORDS)])
        i += 1
    while embedder.count_tokens(" ".join(words)) > tokens - 2:
        words.pop()
    return " ".join(words)


def variants(scratch: Path) -> dict[str, Embedder]:
    built: dict[str, Embedder] = {}
    for name in MODEL_NAMES:
        files = model_files(name)
        for level in LEVELS:
            built[f"{name} {level}"] = Embedder(files, graph_level=level)
        saved = scratch / f"{name}.all.onnx"
        save_optimized(str(files.onnx), str(saved), "all")
        built[f"{name} saved-all"] = Embedder(replace(files, onnx=saved),
                                              graph_level="disabled")
    return built


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=200)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        embedders = variants(Path(scratch))
    reference = embedders[f"{FP32} all"]
    texts = {n: text_of(reference, n) for n in LENGTHS}
    ms = {(v, n): np.zeros(args.rounds) for v in embedders for n in LENGTHS}
    for embedder in embedders.values():
        embedder.embed_query("warm up " * 50)
    before = os.getloadavg()
    for r in range(args.rounds):
        for n, text in texts.items():
            for name, embedder in embedders.items():
                start = time.perf_counter()
                embedder.embed_query(text)
                ms[name, n][r] = (time.perf_counter() - start) * 1000
    after = os.getloadavg()
    print(f"{args.rounds} rounds, 1 thread; load average {before[0]:.2f} before, "
          f"{after[0]:.2f} after, on {os.cpu_count()} cores\n")
    head = " | ".join(f"{n} tok p50 / p99" for n in LENGTHS)
    print(f"| variant | {head} | cosine to fp32 (min over lengths) |")
    print("|---|" + "---|" * len(LENGTHS) + "---|")
    for name, embedder in embedders.items():
        cells = " | ".join(
            f"{np.percentile(ms[name, n], 50):.2f} / {np.percentile(ms[name, n], 99):.2f}"
            for n in LENGTHS)
        cos = min(float(embedder.embed_query(t) @ reference.embed_query(t))
                  for t in texts.values())
        print(f"| {name} | {cells} | {cos:.4f} |")


if __name__ == "__main__":
    with recorded("embed_variants"):
        main()
