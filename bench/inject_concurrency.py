"""Inject throughput with many channels at once vs the bare embedding ceiling, per model.

The store: LongMemEval user turns (``bench/longmemeval_quality.py`` builds and caches it per
model). The sidecar runs as a ``memsidecar serve`` subprocess over a copy of it with
``[embedding] model`` set. Ceiling: two threads in this process embedding the question texts
one at a time for ``--seconds`` (the model on both cores, nothing else). Then, for each
concurrency C, C client threads (one channel each) send Inject with the question texts for
``--seconds``; completions per second, latency p50 / p99, refusals (admission control; the
client backs off ``BACKOFF_S`` and retries) and the CPU time per call of the server process and
of the client (the ceiling's row: of the embedding). The client runs on the same two cores.

The last lines compare Inject with the ceiling twice: calls per second at the busiest level
(what the load on the machine moves), and the bounds the CPU time per call allows on two
cores (what it moves much less).

Run:  .venv/bin/python -m bench.inject_concurrency [--model minilm-int8] [--seconds 10]
      [--levels 1 8 32 64] [--unix] [--config '[server]\\nmax_workers = 4']
"""

from __future__ import annotations

import argparse
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import grpc
import numpy as np
from grpc_health.v1 import health_pb2, health_pb2_grpc
from memsidecar.v1 import injection_pb2, injection_pb2_grpc

from bench.lme_data import CACHE, load_oracle, questions, store_suffix
from bench.replay_longmemeval import sidecar_process, working_copy
from bench.results import recorded
from sidecar.embedding import Embedder
from sidecar.embedding.config import EmbeddingConfig
from sidecar.embedding.models import MODEL_NAMES, model_files

LEVELS = (1, 8, 32, 64)
# A client told RESOURCE_EXHAUSTED waits this long before its next call.
BACKOFF_S = 0.02


@dataclass
class Run:
    """Latencies (ms) of the calls answered, calls refused, CPU seconds of the server process
    and of this (client) process meanwhile."""

    ms: list[float]
    refused: int = 0
    server_cpu: float = 0.0
    client_cpu: float = 0.0


def run_for(seconds: float, workers: int, work: Callable[[int, int], object],
            server: int | None = None) -> Run:
    """Run ``work(worker, i)`` in ``workers`` threads for ``seconds``. A call refused with
    RESOURCE_EXHAUSTED (admission control) is counted and retried after ``BACKOFF_S``.
    ``server``: the pid whose CPU time is measured beside this process's."""
    latencies: list[list[float]] = [[] for _ in range(workers)]
    refused = [0] * workers
    stop = time.perf_counter() + seconds

    def loop(worker: int) -> None:
        i = worker
        while time.perf_counter() < stop:
            start = time.perf_counter()
            try:
                work(worker, i)
            except grpc.RpcError as err:
                if err.code() != grpc.StatusCode.RESOURCE_EXHAUSTED:
                    raise
                refused[worker] += 1
                time.sleep(BACKOFF_S)
                continue
            latencies[worker].append((time.perf_counter() - start) * 1000)
            i += workers

    threads = [threading.Thread(target=loop, args=(w,)) for w in range(workers)]
    before = (cpu_seconds(server) if server else 0.0, cpu_seconds())
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    after = (cpu_seconds(server) if server else 0.0, cpu_seconds())
    return Run([ms for per in latencies for ms in per], sum(refused),
               after[0] - before[0], after[1] - before[1])


def cpu_seconds(pid: int | None = None) -> float:
    """User + system CPU seconds of process ``pid`` (default: this one), all its threads."""
    if pid is None:
        return time.process_time()
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


HEADER = ("| load | calls/s | p50 ms | p99 ms | refused/s | server CPU ms/call "
          "| client CPU ms/call |\n|---|---|---|---|---|---|---|")


def line(name: str, run: Run, seconds: float) -> str:
    p50, p99 = np.percentile(run.ms, [50, 99])
    calls = len(run.ms)
    cpu = [f"{1000 * c / calls:.2f}" if c else "" for c in (run.server_cpu, run.client_cpu)]
    return (f"| {name} | {calls / seconds:.1f} | {p50:.1f} | {p99:.1f} | "
            f"{run.refused / seconds:.1f} | {cpu[0]} | {cpu[1]} |")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", choices=MODEL_NAMES, default=EmbeddingConfig().model,
                        help="default: the shipped [embedding] model")
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--levels", type=int, nargs="+", default=LEVELS)
    parser.add_argument("--unix", action="store_true",
                        help="the sidecar listens on a Unix socket instead of loopback TCP")
    parser.add_argument("--config", default="",
                        help="more TOML for the sidecar, e.g. '[server]\\nmax_workers = 4'")
    args = parser.parse_args()
    texts = [q.text for q in questions(load_oracle())]
    store = CACHE / f"lme_store_user{store_suffix(args.model)}"
    if not store.exists():
        raise SystemExit(f"{store} missing: run bench/longmemeval_quality.py --model "
                         f"{args.model} --channels off (or both)")
    embedder = Embedder(model_files(args.model))
    extra = args.config.replace("\\n", "\n")
    print(f"model {args.model}; {len(texts)} question texts; "
          f"{'unix socket' if args.unix else 'loopback TCP'}; config {extra!r}; load average "
          f"{os.getloadavg()[0]:.2f} on {os.cpu_count()} cores\n")
    print(HEADER)
    bare = run_for(args.seconds, 2, lambda _w, i: embedder.embed_query(texts[i % len(texts)]))
    bare.server_cpu, bare.client_cpu = bare.client_cpu, 0.0  # the embedding is the "server"
    print(line("bare embedding, 2 threads (ceiling)", bare, args.seconds))
    toml = f'[embedding]\nmodel = "{args.model}"\n{extra}\n'
    with working_copy(store, toml) as data:
        target = f"unix://{data / 'sidecar.sock'}" if args.unix else ""
        with sidecar_process(data, target) as (channel, proc):
            inject = injection_pb2_grpc.MemoryInjectionStub(channel)

            def call(worker: int, i: int) -> None:
                inject.Inject(injection_pb2.InjectRequest(
                    agent_id="bench", channel_id=f"c{worker}", text=texts[i % len(texts)],
                    source="user"))

            run_for(2.0, 8, call)  # warm: every worker thread and channel state
            runs = {level: run_for(args.seconds, level, call, proc.pid)
                    for level in args.levels}
            for level, run in runs.items():
                print(line(f"Inject, {level} channels", run, args.seconds))
            health = health_pb2_grpc.HealthStub(channel)
            ping = run_for(args.seconds, 8, lambda _w, _i: health.Check(
                health_pb2.HealthCheckRequest()), proc.pid)
            print(line("Health.Check, 8 channels (the gRPC floor)", ping, args.seconds))
    print(f"\nload average after: {os.getloadavg()[0]:.2f}\n")
    busiest = max(runs)
    print(f"Inject at {busiest} channels: {len(runs[busiest].ms) / len(bare.ms):.0%} of the "
          "ceiling's calls/s.")
    print(bounds(bare, max(runs.values(), key=lambda r: len(r.ms)), ping))


def bounds(bare: Run, inject: Run, ping: Run) -> str:
    """Calls/s two cores allow at the CPU time per call measured (client + server)."""
    def per_call(run: Run) -> float:
        return (run.server_cpu + run.client_cpu) / len(run.ms)

    embed, whole, hop = per_call(bare), per_call(inject), per_call(ping)
    cores = os.cpu_count() or 1
    return (f"CPU ms per call: embedding {1000 * embed:.2f}, Inject {1000 * whole:.2f} "
            f"(server + client), gRPC hop {1000 * hop:.2f}.\n"
            f"Bounds on {cores} cores: embedding alone {cores / embed:.0f}/s; Inject as "
            f"measured {cores / whole:.0f}/s ({embed / whole:.0%} of the ceiling); embedding + "
            f"hop, no other work {cores / (embed + hop):.0f}/s ({embed / (embed + hop):.0%}).")


if __name__ == "__main__":
    with recorded("inject_concurrency"):
        main()
