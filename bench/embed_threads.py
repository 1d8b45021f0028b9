"""One query embedding on one vs two onnxruntime threads, by length: where a second thread pays.

Embeds the user turns of the replay benchmark (the first 100 LongMemEval questions with two
sessions or more) with a one-thread and a two-thread session, interleaved so both see the same
load. Prints the median per length band and the p50 / p95 / p99 of the policies "two threads
from N model tokens" (what ``[server] onnx_long_text_tokens`` sets).

Run:  .venv/bin/python -m bench.embed_threads
"""

from __future__ import annotations

import os
import time

import numpy as np

from bench.lme import oracle
from sidecar.embedding import Embedder, bundled_model_files

BANDS = ((0, 32), (32, 64), (64, 96), (96, 128), (128, 257))
THRESHOLDS = (1, 64, 96, 128, 10_000)


def turns() -> list[str]:
    chosen = [q for q in oracle()[:250] if len(q["haystack_sessions"]) >= 2][:100]
    return [m["content"] for q in chosen for s in q["haystack_sessions"] for m in s
            if m["role"] == "user" and m["content"].strip()]


def pct(values: np.ndarray) -> str:
    p50, p95, p99 = np.percentile(values, [50, 95, 99])
    return f"{p50:.2f} / {p95:.2f} / {p99:.2f}"


def main() -> None:
    files = bundled_model_files()
    one = Embedder(files)  # every query on one thread
    two = Embedder(files, long_text_threads=2, long_text_tokens=1)  # every query on two
    texts = turns()
    tokens = np.array([min(one.count_tokens(t) + 2, one.max_tokens) for t in texts])
    ms = np.zeros((len(texts), 2))
    for i, text in enumerate(texts):
        for j, embedder in enumerate((one, two)):
            start = time.perf_counter()
            embedder.embed_query(text)
            ms[i, j] = (time.perf_counter() - start) * 1000
    print(f"{len(texts)} turns; model tokens p50 {np.median(tokens):.0f}, "
          f"p99 {np.percentile(tokens, 99):.0f}; load average {os.getloadavg()[0]:.1f} on "
          f"{os.cpu_count()} cores\n")
    print("| model tokens | turns | 1 thread p50 ms | 2 threads p50 ms | saved |")
    print("|---|---|---|---|---|")
    for lo, hi in BANDS:
        band = (tokens >= lo) & (tokens < hi)
        if band.any():
            a, b = np.median(ms[band, 0]), np.median(ms[band, 1])
            print(f"| {lo}-{hi - 1} | {band.sum()} | {a:.2f} | {b:.2f} | {1 - b / a:.0%} |")
    print("\n| two threads from | share of turns | p50 / p95 / p99 ms | mean ms |")
    print("|---|---|---|---|")
    for threshold in THRESHOLDS:
        mixed = np.where(tokens >= threshold, ms[:, 1], ms[:, 0])
        label = "never" if threshold > one.max_tokens else f"{threshold} tokens"
        print(f"| {label} | {np.mean(tokens >= threshold):.0%} | {pct(mixed)} | "
              f"{mixed.mean():.2f} |")


if __name__ == "__main__":
    from bench.results import recorded

    with recorded("embed_threads"):
        main()
