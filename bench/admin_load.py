"""Does the admin page slow Inject? Inject latency over gRPC with the page idle, then while a
reader loads admin pages back to back (memories, search, vault, a timeline) on the HTTP port.

A fresh sidecar on free ports with ``--memories`` synthetic memories (``bench.corpus``) of one
agent; ``--calls`` Injects on 20 channels per phase. The sidecar and the gRPC client share this
process; the page reader is a process of its own. Prints Inject p50 / p90 / p99 per
phase and each page's p50, and writes ``bench/results/admin_load.md``.

``--pause`` seconds between two page loads (0 = back to back, the worst case; a person reading
pages loads one every few seconds).

Run:  .venv/bin/python -m bench.admin_load [--memories 5000] [--calls 300] [--pause 0]
"""

from __future__ import annotations

import argparse
import multiprocessing
import tempfile
import time
import urllib.request
from multiprocessing.queues import Queue
from multiprocessing.synchronize import Event
from pathlib import Path

import grpc
import numpy as np
from memsidecar.v1 import injection_pb2, injection_pb2_grpc, memory_pb2, store_pb2, store_pb2_grpc

from bench.corpus import corpus
from bench.results import recorded
from sidecar.api.server import create_server
from sidecar.api.server_config import ServerConfig
from sidecar.app import App
from sidecar.metrics.config import HttpConfig

AGENT = "bench"
PAGES = ("/memories?agent=bench", "/search?q=billing+pipeline+latency&agent=bench",
         "/vault?scope=bench", "/injections?channel=idle-0", "/")


def fill(target: str, texts: list[str]) -> None:
    stub = store_pb2_grpc.MemoryStoreStub(grpc.insecure_channel(target))
    requests = (store_pb2.UpsertMemoryRequest(memory=memory_pb2.Memory(
        content=t, type=memory_pb2.MEMORY_TYPE_FACT, agent_id=AGENT)) for t in texts)
    stub.ImportMemories(requests, timeout=3600)


def injects(target: str, phase: str, queries: list[str]) -> np.ndarray:
    stub = injection_pb2_grpc.MemoryInjectionStub(grpc.insecure_channel(target))
    took = []
    for i, text in enumerate(queries):
        start = time.perf_counter()
        stub.Inject(injection_pb2.InjectRequest(agent_id=AGENT, channel_id=f"{phase}-{i % 20}",
                                                text=text))
        took.append((time.perf_counter() - start) * 1000)
    return np.array(took)


def reader(base: str, pause: float, stop: Event, out: Queue[dict[str, list[float]]]) -> None:
    """Load the pages back to back until ``stop``; put each page's times (ms) on ``out``."""
    times: dict[str, list[float]] = {}
    while not stop.is_set():
        for page in PAGES:
            start = time.perf_counter()
            with urllib.request.urlopen(base + page, timeout=60) as reply:
                reply.read()
            times.setdefault(page, []).append((time.perf_counter() - start) * 1000)
            stop.wait(pause)
    out.put(times)


def line(name: str, ms: np.ndarray) -> str:
    p50, p90, p99 = np.percentile(ms, [50, 90, 99])
    return f"{name:<28} p50 {p50:7.2f} ms  p90 {p90:7.2f} ms  p99 {p99:7.2f} ms  (n={len(ms)})"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--memories", type=int, default=5000)
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--pause", type=float, default=0.0)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        config = ServerConfig(listen="127.0.0.1:0", data_dir=str(Path(folder) / "data"),
                              http=HttpConfig(listen="127.0.0.1:0"))
        server = create_server(App.open(config))
        server.start()
        assert server.http is not None
        target, base = f"127.0.0.1:{server.port}", f"http://127.0.0.1:{server.http.port}"
        try:
            texts = corpus(args.memories)
            fill(target, texts)
            queries = [t.split(" and noted")[0] + "?" for t in corpus(args.calls, seed=11)]
            with recorded("admin_load"):
                print(f"{args.memories} memories, {args.calls} Injects per phase, "
                      f"{args.pause} s between page loads")
                injects(target, "warm", queries[:20])
                print(line("Inject, page idle", injects(target, "idle", queries)))
                stop, out = multiprocessing.Event(), multiprocessing.Queue()
                process = multiprocessing.Process(target=reader, args=(base, args.pause, stop, out))
                process.start()
                time.sleep(1.0)  # the reader is loading pages
                busy = injects(target, "busy", queries)
                stop.set()
                times = out.get(timeout=120)
                process.join()
                print(line("Inject, page loaded", busy))
                for page, ms in times.items():
                    print(line(page[:28], np.array(ms)))
        finally:
            server.stop(grace=1)


if __name__ == "__main__":
    main()
