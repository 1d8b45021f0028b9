"""Inject throughput with many channels at once vs the bare embedding ceiling, per model.

The store: LongMemEval user turns (``bench/longmemeval_quality.py`` builds and caches it per
model). The sidecar runs as a ``memsidecar serve`` subprocess over a copy of it with
``[embedding] model`` set. Ceiling: two threads in this process embedding the question texts
one at a time for ``--seconds`` (the model on both cores, nothing else). Then, for each
concurrency C, C client threads (one channel each) send Inject with the question texts for
``--seconds``; completions per second and latency p50 / p99. The client runs on the same two
cores.

Run:  .venv/bin/python -m bench.inject_concurrency [--model minilm-int8] [--seconds 10]
"""

from __future__ import annotations

import argparse
import os
import threading
import time
from collections.abc import Callable

import numpy as np
from memsidecar.v1 import injection_pb2, injection_pb2_grpc

from bench.lme_data import CACHE, load_oracle, questions
from bench.replay_longmemeval import sidecar, working_copy
from bench.results import recorded
from sidecar.embedding import Embedder
from sidecar.embedding.models import FP32, MODEL_NAMES, model_files

LEVELS = (1, 8, 32, 64)


def run_for(seconds: float, workers: int, work: Callable[[int, int], None]) -> list[float]:
    """Run ``work(worker, i)`` in ``workers`` threads for ``seconds``; latencies in ms."""
    latencies: list[list[float]] = [[] for _ in range(workers)]
    stop = time.perf_counter() + seconds

    def loop(worker: int) -> None:
        i = worker
        while time.perf_counter() < stop:
            start = time.perf_counter()
            work(worker, i)
            latencies[worker].append((time.perf_counter() - start) * 1000)
            i += workers

    threads = [threading.Thread(target=loop, args=(w,)) for w in range(workers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return [ms for per in latencies for ms in per]


def line(name: str, ms: list[float], seconds: float) -> str:
    p50, p99 = np.percentile(ms, [50, 99])
    return f"| {name} | {len(ms) / seconds:.1f} | {p50:.1f} | {p99:.1f} |"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", choices=MODEL_NAMES, default=FP32)
    parser.add_argument("--seconds", type=float, default=10.0)
    args = parser.parse_args()
    texts = [q.text for q in questions(load_oracle())]
    suffix = "" if args.model == FP32 else f"_{args.model}"
    store = CACHE / f"lme_store_user{suffix}"
    if not store.exists():
        raise SystemExit(f"{store} missing: run bench/longmemeval_quality.py --model {args.model}")
    embedder = Embedder(model_files(args.model))
    print(f"model {args.model}; {len(texts)} question texts; load average "
          f"{os.getloadavg()[0]:.2f} on {os.cpu_count()} cores\n")
    print("| load | calls/s | p50 ms | p99 ms |\n|---|---|---|---|")
    bare = run_for(args.seconds, 2, lambda _w, i: embedder.embed_query(texts[i % len(texts)]))
    print(line("bare embedding, 2 threads (ceiling)", bare, args.seconds))
    toml = f'[embedding]\nmodel = "{args.model}"\n'
    with working_copy(store, toml) as data, sidecar(data) as channel:
        inject = injection_pb2_grpc.MemoryInjectionStub(channel)
        for level in LEVELS:
            def call(worker: int, i: int) -> None:
                inject.Inject(injection_pb2.InjectRequest(
                    agent_id="bench", channel_id=f"c{worker}", text=texts[i % len(texts)],
                    source="user"))

            ms = run_for(args.seconds, level, call)
            print(line(f"Inject, {level} channels", ms, args.seconds))
    print(f"\nload average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    with recorded("inject_concurrency"):
        main()
