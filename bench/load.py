"""Load on a real ``memsidecar serve`` process: backpressure, latency of admitted calls, health.

Phase 1: ``--channels`` concurrent conversations (one thread each, its own agent) make
``--injects`` Injects each while a writer upserts memories without pause; a RESOURCE_EXHAUSTED
Inject is retried after a short backoff, as a client should. Phase 2: ``--searches`` Searches
sent at once. Throughout, a prober sends a health check every 100 ms with a 1 s deadline.
Reported per phase: calls, errors by status, RESOURCE_EXHAUSTED count, p50/p99 of admitted
calls, and health checks answered / missed / slowest.

Run:  .venv/bin/python -m bench.load [--channels 64] [--injects 150] [--searches 1000]
Writes bench/results/load.md.
"""

from __future__ import annotations

import argparse
import collections
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from concurrent import futures
from dataclasses import dataclass, field
from pathlib import Path

import grpc
import numpy as np
from grpc_health.v1 import health_pb2, health_pb2_grpc
from memsidecar.v1 import injection_pb2 as inj
from memsidecar.v1 import injection_pb2_grpc, store_pb2_grpc
from memsidecar.v1 import memory_pb2 as m
from memsidecar.v1 import store_pb2 as s

ROOT = Path(__file__).resolve().parent.parent
TOPICS = ("tea", "the deploy", "the parser", "Oslo", "the budget", "the cat", "jazz", "rust")


@dataclass
class Tally:
    latencies_ms: list[float] = field(default_factory=list)
    codes: collections.Counter[str] = field(default_factory=collections.Counter)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def timed(self, call: Callable[[], object]) -> grpc.StatusCode:
        start = time.perf_counter()
        try:
            call()
            code = grpc.StatusCode.OK
        except grpc.RpcError as err:
            code = err.code()  # type: ignore[attr-defined]
        with self.lock:
            self.codes[code.name] += 1
            if code == grpc.StatusCode.OK:
                self.latencies_ms.append((time.perf_counter() - start) * 1000)
        return code  # type: ignore[no-any-return]

    def report(self, name: str) -> str:
        lat = np.array(self.latencies_ms) if self.latencies_ms else np.zeros(1)
        codes = ", ".join(f"{k} {v}" for k, v in sorted(self.codes.items()))
        return (f"| {name} | {sum(self.codes.values())} | {codes} | "
                f"{self.codes.get('RESOURCE_EXHAUSTED', 0)} | {np.percentile(lat, 50):.1f} | "
                f"{np.percentile(lat, 99):.1f} |")


class Prober(threading.Thread):
    """A health check every 100 ms with a 1 s deadline."""

    def __init__(self, channel: grpc.Channel) -> None:
        super().__init__(daemon=True)
        self.stub = health_pb2_grpc.HealthStub(channel)
        self.stop = threading.Event()
        self.answered, self.missed, self.slowest_ms = 0, 0, 0.0

    def run(self) -> None:
        while not self.stop.wait(0.1):
            start = time.perf_counter()
            try:
                self.stub.Check(health_pb2.HealthCheckRequest(), timeout=1)
                self.answered += 1
                self.slowest_ms = max(self.slowest_ms, (time.perf_counter() - start) * 1000)
            except grpc.RpcError:
                self.missed += 1

    def report(self) -> str:
        self.stop.set()
        self.join()
        return (f"health: {self.answered} answered, {self.missed} missed, slowest "
                f"{self.slowest_ms:.1f} ms")


def start_server(data: Path, port: int) -> subprocess.Popen[bytes]:
    proc = subprocess.Popen([sys.executable, "-m", "sidecar", "serve", "--listen",
                             f"127.0.0.1:{port}", "--data-dir", str(data), "--http-listen", "",
                             "--log-level", "WARNING"], cwd=ROOT)
    channel = grpc.insecure_channel(f"127.0.0.1:{port}")
    stub = health_pb2_grpc.HealthStub(channel)
    for _ in range(600):
        try:
            if stub.Check(health_pb2.HealthCheckRequest(), timeout=1).status == 1:
                return proc
        except grpc.RpcError:
            time.sleep(0.1)
    proc.kill()
    raise TimeoutError("server never became SERVING")


def conversation(stub: injection_pb2_grpc.MemoryInjectionStub, index: int, injects: int,
                 tally: Tally) -> None:
    for turn in range(injects):
        request = inj.InjectRequest(
            agent_id=f"agent-{index % 8}", channel_id=f"chan-{index}",
            text=f"what did we say about {TOPICS[(index + turn) % len(TOPICS)]}?")
        while tally.timed(lambda r=request: stub.Inject(r, timeout=30)) == \
                grpc.StatusCode.RESOURCE_EXHAUSTED:
            time.sleep(0.05)


def writer(stub: store_pb2_grpc.MemoryStoreStub, stop: threading.Event, tally: Tally) -> None:
    i = 0
    while not stop.is_set():
        memory = m.Memory(content=f"Note {i}: {TOPICS[i % len(TOPICS)]} came up again",
                          type=m.MEMORY_TYPE_FACT, agent_id=f"agent-{i % 8}")
        request = s.UpsertMemoryRequest(memory=memory)
        tally.timed(lambda r=request: stub.UpsertMemory(r, timeout=30))
        i += 1


def phase_injects(channel: grpc.Channel, channels: int, injects: int) -> list[str]:
    stub = injection_pb2_grpc.MemoryInjectionStub(channel)
    store = store_pb2_grpc.MemoryStoreStub(channel)
    injected, written, stop = Tally(), Tally(), threading.Event()
    prober = Prober(channel)
    prober.start()
    write = threading.Thread(target=writer, args=(store, stop, written), daemon=True)
    write.start()
    start = time.perf_counter()
    with futures.ThreadPoolExecutor(channels) as pool:
        list(pool.map(lambda i: conversation(stub, i, injects, injected), range(channels)))
    stop.set()
    write.join()
    elapsed = time.perf_counter() - start
    return [injected.report(f"Inject ({channels} channels x {injects})"),
            written.report("UpsertMemory (writer)"),
            f"phase 1: {elapsed:.1f} s; {prober.report()}"]


def phase_flood(channel: grpc.Channel, searches: int) -> list[str]:
    stub = store_pb2_grpc.MemoryStoreStub(channel)
    tally = Tally()
    prober = Prober(channel)
    prober.start()
    start = time.perf_counter()
    sent = [(time.perf_counter(), stub.Search.future(s.SearchRequest(
        query=f"anything about {TOPICS[i % len(TOPICS)]}", agent_id="agent-1"), timeout=60))
        for i in range(searches)]
    for began, future in sent:
        try:
            future.result()
            code = grpc.StatusCode.OK
        except grpc.RpcError as err:
            code = err.code()  # type: ignore[attr-defined]
        tally.codes[code.name] += 1
        if code == grpc.StatusCode.OK:  # completion time of a future, measured at collection
            tally.latencies_ms.append((time.perf_counter() - began) * 1000)
    return [tally.report(f"Search flood ({searches} at once)"),
            f"phase 2: {time.perf_counter() - start:.1f} s; {prober.report()}"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--channels", type=int, default=64)
    parser.add_argument("--injects", type=int, default=150)
    parser.add_argument("--searches", type=int, default=1000)
    parser.add_argument("--port", type=int, default=50977)
    args = parser.parse_args()
    from bench.results import recorded

    with tempfile.TemporaryDirectory() as tmp, recorded("load"):
        proc = start_server(Path(tmp) / "data", args.port)
        try:
            channel = grpc.insecure_channel(f"127.0.0.1:{args.port}")
            lines = phase_injects(channel, args.channels, args.injects)
            lines += phase_flood(channel, args.searches)
        finally:
            proc.terminate()
            proc.wait(timeout=60)
        print("| calls | n | statuses | RESOURCE_EXHAUSTED | p50 ms (admitted) | p99 ms |")
        print("|---|---|---|---|---|---|")
        print("\n".join(line for line in lines if line.startswith("|")))
        print()
        print("\n".join(f"- {line}" for line in lines if not line.startswith("|")))


if __name__ == "__main__":
    main()
