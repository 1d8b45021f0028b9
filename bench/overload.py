"""Overload on a real ``memsidecar serve`` process: how fast admitted calls and refusals answer.

A store of ``--memories`` memories (built once, cached in ``bench/.cache/``, copied per run).
Phase 1: ``--searches`` Searches sent at once. Phase 2: ``--channels`` conversations (one
thread each) of ``--injects`` Injects, all at once; a refused Inject is retried after 50 ms;
with ``--writer``, a client upserts memories without pause meanwhile (its calls get a row of
their own). Throughout, a health check every 100 ms with a 1 s deadline. Reported per phase,
client side: OK / RESOURCE_EXHAUSTED counts, p50/p99 of admitted calls and of refusals,
admitted calls per second; server side (the ``memsidecar_rpc_duration_seconds`` histogram,
interpolated within its buckets as Prometheus' ``histogram_quantile`` does): p99 of admitted
calls and of refusals.
The client side of a burst counts more than the server's time: this one Python process
sends the calls one after the other (0.1-0.2 ms each) on the cores the server uses, and grpc
takes each arriving call in on one thread (about 0.5 ms each, measured as the time the whole
burst takes, while it shares the cores with the admitted work and the client), so the last
of 1,000 calls sent at once is answered some 0.4-0.6 s after the first was sent, even though
a refusal then costs the server about 1 ms.

Run:  .venv/bin/python -m bench.overload [--memories 2000] [--searches 1000] [--channels 64]
      [--injects 100] [--writer] [--root DIR] [--set KEY=VALUE ...]
``--root``: serve the code in DIR (e.g. an older checkout); ``--set``: a ``[server]`` key.
Writes bench/results/overload.md.
"""

from __future__ import annotations

import argparse
import collections
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
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

from bench.corpus import corpus

ROOT = Path(__file__).resolve().parent.parent
CACHE = ROOT / "bench" / ".cache"
OK, BUSY = grpc.StatusCode.OK.name, grpc.StatusCode.RESOURCE_EXHAUSTED.name
METRIC = "memsidecar_rpc_duration_seconds"
TOPICS = ("tea", "the deploy", "the parser", "Oslo", "the budget", "the cat", "jazz", "rust")


@dataclass
class Tally:
    ms: dict[str, list[float]] = field(default_factory=lambda: collections.defaultdict(list))
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, code: str, ms: float) -> None:
        with self.lock:
            self.ms[code].append(ms)

    def timed(self, call: Callable[[], object]) -> str:
        start = time.perf_counter()
        try:
            call()
            code = OK
        except grpc.RpcError as err:
            code = err.code().name  # type: ignore[attr-defined]
        self.add(code, (time.perf_counter() - start) * 1000)
        return code

    def row(self, name: str, seconds: float, server: dict[str, float]) -> str:
        ok, busy = self.ms.get(OK, []), self.ms.get(BUSY, [])
        other = {k: len(v) for k, v in self.ms.items() if k not in (OK, BUSY)}
        return (f"| {name} | {len(ok)} | {len(busy)} | {other or '-'} | {pct(ok, 50)} | "
                f"{pct(ok, 99)} | {server.get(OK, float('nan')):.0f} | {pct(busy, 50)} | "
                f"{pct(busy, 99)} | {server.get(BUSY, float('nan')):.1f} | "
                f"{len(ok) / seconds:.0f} | {os.getloadavg()[0]:.1f} |")


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


def pct(values: list[float], q: int) -> str:
    return f"{np.percentile(values, q):.1f}" if values else "-"


def buckets(port: int, method: str) -> dict[str, list[tuple[float, float]]]:
    """The server's cumulative latency buckets of ``method`` by status code."""
    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read()
    found: dict[str, list[tuple[float, float]]] = collections.defaultdict(list)
    for line in text.decode().splitlines():
        if line.startswith(f"{METRIC}_bucket{{") and f'method="{method}"' in line:
            labels, value = line.rsplit(" ", 1)
            code = labels.split('code="')[1].split('"')[0]
            le = labels.split('le="')[1].split('"')[0]
            found[code].append((float(le), float(value)))
    return found


def quantiles(before: dict[str, list[tuple[float, float]]],
              after: dict[str, list[tuple[float, float]]], q: float) -> dict[str, float]:
    """Per status code, the ``q`` quantile (ms) of the calls between two scrapes."""
    out = {}
    for code, rows in after.items():
        old = dict(before.get(code, []))
        counts = [(le, n - old.get(le, 0.0)) for le, n in sorted(rows)]
        total = counts[-1][1]
        if total:
            out[code] = 1000 * interpolate(counts, q * total)
    return out


def interpolate(counts: list[tuple[float, float]], rank: float) -> float:
    low, below = 0.0, 0.0
    for le, n in counts:
        if n >= rank:
            if le == float("inf"):
                return low
            return low + (le - low) * (rank - below) / max(n - below, 1e-9)
        low, below = le, n
    return low


def build_store(n: int, root: Path) -> Path:
    """A data dir holding ``n`` memories, built once."""
    cached = CACHE / f"overload-{n}"
    if (cached / "memsidecar.sqlite3").exists():
        return cached
    tmp = CACHE / f"overload-{n}.building"
    shutil.rmtree(tmp, ignore_errors=True)
    proc, port = serve(tmp, root, http_port=0)
    try:
        channel = grpc.insecure_channel(f"127.0.0.1:{port}")
        stub = store_pb2_grpc.MemoryStoreStub(channel)
        texts = corpus(n)
        batches = [s.ImportBatch(sequence=i // 100, items=[
            s.ImportItem(memory=m.Memory(content=t, type=m.MEMORY_TYPE_FACT,
                                         agent_id=f"agent-{j % 8}"))
            for j, t in enumerate(texts[i:i + 100], start=i)]) for i in range(0, n, 100)]
        acks = list(stub.ImportMemoriesStream(iter(batches), timeout=3600))
        assert sum(a.committed for a in acks) == n, acks[-1]
        channel.close()
    finally:
        proc.terminate()
        proc.wait(timeout=60)
    tmp.rename(cached)
    return cached


def serve(data: Path, root: Path, http_port: int, keys: tuple[str, ...] = ()
          ) -> tuple[subprocess.Popen[bytes], int]:
    data.mkdir(parents=True, exist_ok=True)
    listen = f'"127.0.0.1:{http_port}"' if http_port else '""'
    server = "".join(f"{key}\n" for key in keys)
    (data / "memsidecar.toml").write_text(
        f"[server]\n{server}\n[server.http]\nlisten = {listen}\n")
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "sidecar", "serve", "--listen",
                             f"127.0.0.1:{port}", "--data-dir", str(data), "--log-level",
                             "ERROR"], cwd=root)
    channel = grpc.insecure_channel(f"127.0.0.1:{port}")
    try:
        grpc.channel_ready_future(channel).result(timeout=120)
        stub = health_pb2_grpc.HealthStub(channel)
        for _ in range(1200):
            try:
                if stub.Check(health_pb2.HealthCheckRequest(), timeout=1).status == 1:
                    return proc, port
            except grpc.RpcError:
                pass
            time.sleep(0.1)
    finally:
        channel.close()
    proc.kill()
    raise TimeoutError("server never became SERVING")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def search_flood(channel: grpc.Channel, n: int) -> tuple[Tally, float]:
    stub = store_pb2_grpc.MemoryStoreStub(channel)
    tally = Tally()

    def done(began: float) -> Callable[[grpc.Future], None]:
        def record(future: grpc.Future) -> None:
            err = future.exception()
            code = OK if err is None else err.code().name  # type: ignore[attr-defined]
            tally.add(code, (time.perf_counter() - began) * 1000)
        return record

    queries = [f"what about {TOPICS[i % len(TOPICS)]} and {text[:40]}"
               for i, text in enumerate(corpus(n, seed=11))]
    calls = []
    start = time.perf_counter()
    for i, query in enumerate(queries):
        future = stub.Search.future(s.SearchRequest(query=query, agent_id=f"agent-{i % 8}"),
                                    timeout=60)
        future.add_done_callback(done(time.perf_counter()))
        calls.append(future)
    for future in calls:
        future.exception()
    last = time.perf_counter()
    return tally, last - start


def inject_flood(channel: grpc.Channel, channels: int, injects: int,
                 written: Tally | None = None) -> tuple[Tally, float]:
    """The conversations; with ``written``, a client upserting without pause meanwhile."""
    stub = injection_pb2_grpc.MemoryInjectionStub(channel)
    store = store_pb2_grpc.MemoryStoreStub(channel)
    tally, stop = Tally(), threading.Event()

    def conversation(index: int) -> None:
        for turn in range(injects):
            request = inj.InjectRequest(
                agent_id=f"agent-{index % 8}", channel_id=f"chan-{index}",
                text=f"what did we say about {TOPICS[(index + turn) % len(TOPICS)]}?")
            while tally.timed(lambda r=request: stub.Inject(r, timeout=60)) == BUSY:
                time.sleep(0.05)

    def write(into: Tally) -> None:
        i = 0
        while not stop.is_set():
            memory = m.Memory(content=f"Note {i}: {TOPICS[i % len(TOPICS)]} came up again",
                              type=m.MEMORY_TYPE_FACT, agent_id=f"agent-{i % 8}")
            request = s.UpsertMemoryRequest(memory=memory)
            into.timed(lambda r=request: store.UpsertMemory(r, timeout=60))
            i += 1

    writer = threading.Thread(target=write, args=(written,), daemon=True)
    if written is not None:
        writer.start()
    start = time.perf_counter()
    with futures.ThreadPoolExecutor(channels) as pool:
        list(pool.map(conversation, range(channels)))
    stop.set()
    if written is not None:
        writer.join()
    return tally, time.perf_counter() - start


def phase(name: str, run: Callable[[], tuple[Tally, float]], channel: grpc.Channel,
          http: int, method: str, beside: tuple[tuple[str, Tally, str], ...] = ()
          ) -> list[str]:
    """One row for ``run``'s calls of ``method``, one per (name, tally, method) ``beside``
    it (calls other clients made meanwhile), then the health line."""
    prober = Prober(channel)
    prober.start()
    methods = (method, *(other for _, _, other in beside))
    before = {m: buckets(http, m) for m in methods}
    tally, seconds = run()
    rows = [(name, tally, method), *beside]
    return [*(t.row(n, seconds, quantiles(before[m], buckets(http, m), 0.99))
              for n, t, m in rows),
            f"{name}: {seconds:.1f} s; {prober.report()}"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--memories", type=int, default=2000)
    parser.add_argument("--searches", type=int, default=1000)
    parser.add_argument("--channels", type=int, default=64)
    parser.add_argument("--injects", type=int, default=100)
    parser.add_argument("--writer", action="store_true",
                        help="a client upserts memories without pause during the Inject flood")
    parser.add_argument("--root", type=Path, default=ROOT)
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="a [server] key for the run, e.g. --set max_workers=2")
    args = parser.parse_args()
    from bench.results import recorded

    store = build_store(args.memories, args.root)
    with tempfile.TemporaryDirectory() as tmp, recorded("overload"):
        data = Path(tmp) / "data"
        shutil.copytree(store, data)
        http = free_port()
        proc, port = serve(data, args.root, http, tuple(args.set))
        try:
            channel = grpc.insecure_channel(f"127.0.0.1:{port}")
            lines = phase(f"Search flood ({args.searches} at once)",
                          lambda: search_flood(channel, args.searches), channel, http, "Search")
            written = Tally()
            lines += phase(f"Inject flood ({args.channels} channels x {args.injects})",
                           lambda: inject_flood(channel, args.channels, args.injects,
                                                written if args.writer else None),
                           channel, http, "Inject",
                           (("UpsertMemory (writer)", written, "UpsertMemory"),)
                           if args.writer else ())
        finally:
            proc.terminate()
            proc.wait(timeout=60)
        print(f"root: {args.root}; {args.memories} memories; [server] {args.set or 'defaults'}")
        print("| calls | OK | RESOURCE_EXHAUSTED | other | OK p50 ms | OK p99 ms | "
              "OK p99 ms (server) | refused p50 ms | refused p99 ms | refused p99 ms (server) "
              "| OK/s | load |")
        print("|---|---|---|---|---|---|---|---|---|---|---|---|")
        print("\n".join(line for line in lines if line.startswith("|")))
        print()
        print("\n".join(f"- {line}" for line in lines if not line.startswith("|")))


if __name__ == "__main__":
    main()
