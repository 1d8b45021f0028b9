"""ForgetUser of a user with 1,000 memories in a 100k store: its time, what other calls wait
meanwhile, where the time goes, and what ``secure_delete`` costs the writes.

The store (built once, cached in bench/.cache/, copied afresh for every run): one agent,
``--size`` memories with random unit vectors and synthetic texts: half the agent's general
knowledge, the rest spread over 100 users; the erased user has ``--user-memories`` of them
(half captured, each with a capture record and an edge), 4 channels with query context. The
first start builds the hnsw index and saves it and the BM25 postings, as a long-running
store has them. Then, on the real server over gRPC:

- ForgetUser, timed, while three threads keep calling Search, Inject (another user's
  channel) and UpsertMemory (explicit writes); each call's latency before and during it;
- the longest hold of the write lock (one chunk's transaction), the index files deleted
  and the WAL truncated, each timed in the server;
- the bytes: a scan of every file under the data dir for a marker word every erased text
  carries (0 expected) and one the other users' carry;
- ``secure_delete`` on vs off: single-row updates and deletes of memory rows, interleaved.

Run:  nice -n 10 .venv/bin/python -m bench.forget_user [--size 100000] [--user-memories 1000]
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import statistics
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import grpc
import numpy as np
from memsidecar.v1 import injection_pb2 as inj
from memsidecar.v1 import injection_pb2_grpc, store_pb2_grpc
from memsidecar.v1 import memory_pb2 as m
from memsidecar.v1 import store_pb2 as s

from bench.corpus import memory_text
from bench.results import ROOT, write_results
from sidecar.api.server import create_server
from sidecar.api.server_config import ServerConfig
from sidecar.app import App
from sidecar.config import CONFIG_FILENAME, Config, ConfigStore
from sidecar.embedding import Embedder
from sidecar.embedding.models import INT8, identity, model_files
from sidecar.memory import erasure
from sidecar.metrics.config import HttpConfig
from sidecar.records import CAPTURE_SOURCE, Memory, MemoryType
from sidecar.store.db import Database
from sidecar.store.erasure import ErasureRepo
from sidecar.store.memories import embedding_to_blob
from sidecar.store.model_repo import MODEL_KEY, ModelRepo
from sidecar.store.repos import Repositories

AGENT = "bench"
TARGET = "u-target"
GONE_MARK = "qzxgonemark"  # in every text of the erased user
KEPT_MARK = "qzxkeptmark"  # in the other users'
USERS = 100
CHANNELS = 4
CACHE = ROOT / "bench" / ".cache"


def build(data_dir: Path, size: int, mine: int, dim: int) -> None:
    """The store's rows, written straight into SQLite (the write path's rows)."""
    rng = random.Random(40)
    vectors = np.random.default_rng(40).standard_normal((size, dim)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    db = Database(ServerConfig(data_dir=str(data_dir)).db_path)
    repo = Repositories.open(db).memories
    now = time.time_ns() // 1000
    try:
        with db.transaction():
            for i in range(size):
                user = TARGET if i % (size // mine) == 0 and i // (size // mine) < mine else (
                    "" if i % 2 else f"u{i % USERS:03d}")
                mark = GONE_MARK if user == TARGET else KEPT_MARK
                captured = user == TARGET and i % 2 == 0
                repo.insert(Memory(
                    id=f"m{i:06d}", content=f"{memory_text(rng)} {mark}{i}",
                    type=MemoryType.OBSERVATION if captured else MemoryType.FACT,
                    importance=0.5, created_at=now + i, updated_at=now + i, last_accessed_at=0,
                    access_count=0, source=CAPTURE_SOURCE if captured else "bench",
                    channel_id=f"t-{i % CHANNELS}" if user == TARGET else "", agent_id=AGENT,
                    forgotten=False, version=1, user_id=user), vectors[i])
            targets = [str(r[0]) for r in db.execute(
                "SELECT id FROM memories WHERE user_id = ? ORDER BY seq", (TARGET,))]
            for n, memory_id in enumerate(targets):
                db.execute("INSERT INTO edges (source_id, target_id, relation, weight, "
                           "created_at) VALUES (?, ?, 1, 0.5, ?)",
                           (memory_id, f"m{(n * 2 + 1) % size:06d}", now))
                db.execute("INSERT INTO captures (channel_id, key, agent_id, role, turn, "
                           "content, context, at_us, memory_id, outcome, held, user_id) "
                           "VALUES (?, ?, ?, 'user', ?, '', '', ?, ?, 'stored', 0, ?)",
                           (f"t-{n % CHANNELS}", f"user:{n}:{now}", AGENT, n, now, memory_id,
                            TARGET))
            for c in range(CHANNELS):
                channel = f"t-{c}"
                db.execute("INSERT INTO channel_owners (channel_id, agent_id, last_used_us) "
                           "VALUES (?, ?, ?)", (channel, AGENT, now))
                db.execute("INSERT INTO channel_speakers (channel_id, user_id) VALUES (?, ?)",
                           (channel, TARGET))
                db.execute("INSERT INTO injection_channels (channel_id, turn) VALUES (?, 8)",
                           (channel,))
                for turn in range(1, 9):
                    db.execute("INSERT INTO injection_context (channel_id, turn, text, "
                               "embedding) VALUES (?, ?, ?, ?)",
                               (channel, turn, f"{memory_text(rng)} {GONE_MARK}c{c}t{turn}",
                                embedding_to_blob(vectors[turn])))
            ModelRepo(db).set(MODEL_KEY, identity(INT8).to_json())
    finally:
        db.close()


def open_app(data_dir: Path, embedder: Embedder) -> App:
    settings = ConfigStore(data_dir / CONFIG_FILENAME, Config(), None)
    app = App.open(ServerConfig(listen="127.0.0.1:0", data_dir=str(data_dir),
                                http=HttpConfig(listen="")), embedder=embedder,
                   settings=settings)
    if app.vectors is not None:
        app.vectors.wait_ready(3600)
    return app


def cached_store(size: int, mine: int, embedder: Embedder) -> Path:
    """The store after a first start (hnsw built and saved, BM25 postings saved)."""
    cached = CACHE / f"forget_user_{size}_{mine}"
    if (cached / "done").exists():
        return cached
    shutil.rmtree(cached, ignore_errors=True)
    cached.mkdir(parents=True)
    begin = time.perf_counter()
    build(cached, size, mine, embedder.dim)
    open_app(cached, embedder).close()
    (cached / "done").write_text(f"{time.perf_counter() - begin:.0f} s\n")
    return cached


@contextmanager
def timed_calls(target: object, name: str, spans: list[float]) -> Iterator[None]:
    """Record the duration of every call of ``target.name`` in ``spans`` (ms)."""
    original = getattr(target, name)

    def wrapper(*args: object, **kwargs: object) -> object:
        begin = time.perf_counter()
        try:
            return original(*args, **kwargs)
        finally:
            spans.append((time.perf_counter() - begin) * 1000)

    setattr(target, name, wrapper)
    try:
        yield
    finally:
        setattr(target, name, original)


class Load:
    """Threads calling one RPC in a loop; each call's (start, ms)."""

    def __init__(self, calls: dict[str, Callable[[int], object]]) -> None:
        self.calls = calls
        self.done: dict[str, list[tuple[float, float]]] = {name: [] for name in calls}
        self.refused: dict[str, int] = dict.fromkeys(calls, 0)
        self._stop = threading.Event()
        self._threads = [threading.Thread(target=self._run, args=(name,), daemon=True)
                         for name in calls]

    def _run(self, name: str) -> None:
        n = 0
        while not self._stop.is_set():
            begin = time.perf_counter()
            try:
                self.calls[name](n)
            except grpc.RpcError as err:  # a busy server refuses: counted, retried later
                if err.code() != grpc.StatusCode.RESOURCE_EXHAUSTED:  # type: ignore[attr-defined]
                    raise
                self.refused[name] += 1
                time.sleep(0.05)
                continue
            self.done[name].append((begin, (time.perf_counter() - begin) * 1000))
            n += 1
            time.sleep(0.005)

    def start(self) -> None:
        for thread in self._threads:
            thread.start()

    def stop(self) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join()


def within(calls: list[tuple[float, float]], start: float, end: float) -> list[float]:
    """Latencies (ms) of the calls that ran, at least in part, in [start, end]."""
    return [ms for at, ms in calls if at <= end and at + ms / 1000 >= start]


def scan(data_dir: Path) -> tuple[int, int]:
    """Occurrences of the erased and the kept marker in every file under the data dir."""
    gone = kept = 0
    for path in data_dir.rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            gone += data.count(GONE_MARK.encode())
            kept += data.count(KEPT_MARK.encode())
    return gone, kept


def secure_delete_cost(data_dir: Path, rounds: int, rows: int) -> dict[str, float]:
    """ms per single-row UPDATE of a memory's text and per single-row DELETE (each its own
    transaction, as the write path commits), secure_delete on vs off, interleaved."""
    db = Database(ServerConfig(data_dir=str(data_dir)).db_path)
    repo = Repositories.open(db).memories
    ids = [str(r[0]) for r in db.execute(
        "SELECT id FROM memories WHERE user_id = '' ORDER BY seq LIMIT ?", (rounds * rows * 2,))]
    got: dict[str, list[float]] = {f"{op} {mode}": [] for op in ("update", "delete")
                                   for mode in ("on", "off")}
    try:
        for r in range(rounds):
            for mode in ("on", "off") if r % 2 == 0 else ("off", "on"):
                db.execute(f"PRAGMA secure_delete={mode.upper()}")
                batch = ids[:rows]
                ids = ids[rows:]
                begin = time.perf_counter()
                for memory_id in batch:
                    memory = repo.get(memory_id)
                    assert memory is not None
                    with db.transaction():
                        db.execute("UPDATE memories SET content = ? WHERE id = ?",
                                   (memory.content[::-1], memory_id))
                got[f"update {mode}"].append((time.perf_counter() - begin) * 1000 / rows)
                begin = time.perf_counter()
                for memory_id in batch:
                    with db.transaction():
                        db.execute("DELETE FROM edges WHERE source_id = ? OR target_id = ?",
                                   (memory_id, memory_id))
                        db.execute("DELETE FROM memory_versions WHERE memory_id = ?",
                                   (memory_id,))
                        db.execute("DELETE FROM memories WHERE id = ?", (memory_id,))
                got[f"delete {mode}"].append((time.perf_counter() - begin) * 1000 / rows)
    finally:
        db.close()
    return {k: statistics.median(v) for k, v in got.items()}


def pct(values: list[float], q: float) -> float:
    return float(np.percentile(values, q)) if values else 0.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--user-memories", type=int, default=1000)
    parser.add_argument("--baseline-s", type=float, default=3.0)
    args = parser.parse_args()
    embedder = Embedder(model_files(INT8), **ServerConfig().embedder_options())
    cached = cached_store(args.size, args.user_memories, embedder)
    with tempfile.TemporaryDirectory(prefix="forget-user-") as tmp:
        data_dir = Path(tmp) / "data"
        shutil.copytree(cached, data_dir)
        report = run(data_dir, embedder, args)
        cost_dir = Path(tmp) / "cost"
        shutil.copytree(cached, cost_dir)
        report["secure_delete_ms_per_row"] = secure_delete_cost(cost_dir, rounds=6, rows=300)
    text = render(report, args)
    print(text)
    write_results("forget_user", text)


def run(data_dir: Path, embedder: Embedder, args: argparse.Namespace) -> dict[str, object]:
    app = open_app(data_dir, embedder)
    server = create_server(app)
    server.start()
    channel = grpc.insecure_channel(f"127.0.0.1:{server.port}")
    store = store_pb2_grpc.MemoryStoreStub(channel)
    injection = injection_pb2_grpc.MemoryInjectionStub(channel)
    before = scan(data_dir)
    load = Load({
        "Search": lambda n: store.Search(s.SearchRequest(
            query="who migrated the billing pipeline", agent_id=AGENT, user_id="u001")),
        "Inject": lambda n: injection.Inject(inj.InjectRequest(
            agent_id=AGENT, channel_id="other-1", user_id="u002",
            text=f"did the data team finish refactoring the audit log {n}")),
        "UpsertMemory": lambda n: store.UpsertMemory(s.UpsertMemoryRequest(memory=m.Memory(
            content=f"The release train number {n} leaves on Thursday", agent_id=AGENT,
            type=m.MEMORY_TYPE_EVENT))),
    })
    chunks: list[float] = []
    statements: list[float] = []
    files: list[float] = []
    vectors: list[float] = []
    wal: list[float] = []
    load.start()
    time.sleep(args.baseline_s)
    with timed_calls(erasure.Eraser, "_erase_chunk", chunks), \
            timed_calls(ErasureRepo, "erase_memories", statements), \
            timed_calls(app.retriever, "rewrite_without", files), \
            timed_calls(app.retriever.vectors, "rewrite_without", vectors), \
            timed_calls(app.db, "purge_wal", wal):
        start = time.perf_counter()
        gone = store.ForgetUser(s.ForgetUserRequest(agent_id=AGENT, user_id=TARGET))
        end = time.perf_counter()
    time.sleep(1.0)
    load.stop()
    after = scan(data_dir)
    again = store.ForgetUser(s.ForgetUserRequest(agent_id=AGENT, user_id=TARGET))
    channel.close()
    server.stop(grace=1)
    calls = {}
    for name, done in load.done.items():
        base = [ms for at, ms in done if at + ms / 1000 < start]
        during = within(done, start, end)
        calls[name] = {"baseline_p50": pct(base, 50), "baseline_max": max(base, default=0),
                       "during_n": len(during), "during_p50": pct(during, 50),
                       "during_max": max(during, default=0), "refused": load.refused[name]}
    return {
        "elapsed_ms": (end - start) * 1000,
        "counts": {"memories": gone.memories, "versions": gone.versions, "edges": gone.edges,
                   "captures": gone.captures, "channels": gone.channels},
        "second_call": [again.memories, again.versions, again.edges, again.captures,
                        again.channels],
        "chunks": {"n": len(chunks), "chunk": erasure.CHUNK,
                   "ms_p50_p90_max": [round(pct(chunks, q), 1) for q in (50, 90, 100)],
                   "statements_ms_p50_p90_max": [round(pct(statements, q), 1)
                                                 for q in (50, 90, 100)]},
        "files_ms": sum(files), "vectors_ms": sum(vectors),
        "wal_ms": sum(wal), "calls": calls,
        "bytes_before": before, "bytes_after": after,
    }


def render(report: dict[str, object], args: argparse.Namespace) -> str:
    calls = report["calls"]
    assert isinstance(calls, dict)
    lines = [
        f"Store: {args.size:,} memories (random unit vectors, synthetic texts), one agent; the "
        f"erased user holds {args.user_memories:,} of them. CPU: {cpu_flags()}",
        "",
        f"- ForgetUser over gRPC: **{report['elapsed_ms']:.0f} ms** "
        f"(counts {json.dumps(report['counts'])}; a second call: {report['second_call']})",
        f"- rows, in chunks (each one transaction under the write lock; its time includes "
        f"waiting for the lock, its statements' does not): {report['chunks']}",
        f"- index files holding them deleted (saved again at the next save): "
        f"{report['files_ms']:.0f} ms (of which vectors.hnsw {report['vectors_ms']:.0f} ms); "
        f"WAL checkpointed and truncated: {report['wal_ms']:.0f} ms",
        f"- bytes (erased marker, kept marker) in every file under the data dir: before "
        f"{report['bytes_before']}, after {report['bytes_after']}",
        "",
        "Other calls (ms), looping on 3 threads beside it:",
        "",
        "| call | baseline p50 | baseline max | calls during | during p50 | during max | "
        "refused (busy) |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, c in calls.items():
        lines.append(f"| {name} | {c['baseline_p50']:.1f} | {c['baseline_max']:.1f} | "
                     f"{c['during_n']} | {c['during_p50']:.1f} | {c['during_max']:.1f} | "
                     f"{c['refused']} |")
    cost = report["secure_delete_ms_per_row"]
    assert isinstance(cost, dict)
    lines += ["", "`secure_delete` (ms per row, each its own transaction, median of 3 rounds "
              "of 300 rows per mode, interleaved):", "",
              "| operation | on | off |", "|---|---|---|"]
    for op in ("update", "delete"):
        lines.append(f"| {op} | {cost[f'{op} on']:.3f} | {cost[f'{op} off']:.3f} |")
    return "\n".join(lines)


def cpu_flags() -> str:
    text = Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace")
    model = next((line.split(":", 1)[1].strip() for line in text.splitlines()
                  if line.startswith("model name")), "unknown")
    flags = next((line.split(":", 1)[1].split() for line in text.splitlines()
                  if line.startswith("flags")), [])
    wanted = [f for f in flags if f in ("avx", "avx2", "avx512f", "avx512_vnni", "avx_vnni",
                                        "fma", "sse4_2")]
    return f"{model}; {' '.join(wanted)}"


if __name__ == "__main__":
    main()
