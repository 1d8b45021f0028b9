"""Foundation benchmark: single-query embedding latency and ImportMemories throughput.

Run: .venv/bin/python bench/bench_foundation.py [--memories 10000] [--queries 300]
Starts a real sidecar in-process on a free port with a fresh data dir, streams the memories
through the generated stub, and reports memories/s end to end (validation, batched
embedding, SQLite commit, index update).
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import grpc
import numpy as np
from memsidecar.v1 import memory_pb2, store_pb2, store_pb2_grpc

from bench.corpus import corpus
from sidecar.api.server import create_server
from sidecar.api.server_config import ServerConfig
from sidecar.app import App
from sidecar.config import CONFIG_FILENAME, Config, ConfigStore
from sidecar.embedding import Embedder
from sidecar.metrics.config import HttpConfig

QUERIES = ["what did we decide about JWT refresh tokens?", "who is on call this week",
           "latency of the search index", "Alice prefers to review the GraphQL schema",
           "why did we roll back the nightly export job after the incident"]


def bench_embedding(app: App, n: int) -> dict[str, float]:
    times = []
    for i in range(n):
        start = time.perf_counter()
        app.embedder.embed_one(f"{QUERIES[i % len(QUERIES)]} {i}")
        times.append(time.perf_counter() - start)
    ms = np.array(times) * 1000
    return {"p50_ms": float(np.percentile(ms, 50)), "p95_ms": float(np.percentile(ms, 95))}


@contextmanager
def serving(embedder: Embedder, config: Config) -> Iterator[str]:
    """A real sidecar with ``config`` on a fresh data dir and a free port (metrics off): its
    address, until the block ends."""
    with tempfile.TemporaryDirectory() as tmp:
        settings = ConfigStore(Path(tmp) / CONFIG_FILENAME, config, None)
        app = App.open(ServerConfig(listen="127.0.0.1:0", data_dir=tmp,
                                    http=HttpConfig(listen="")),
                       embedder=embedder, settings=settings)
        server = create_server(app)
        server.start()
        try:
            yield f"127.0.0.1:{server.port}"
        finally:
            server.stop(grace=1)


def bench_import(target: str, texts: list[str]) -> dict[str, float]:
    stub = store_pb2_grpc.MemoryStoreStub(grpc.insecure_channel(target))
    requests = (
        store_pb2.UpsertMemoryRequest(memory=memory_pb2.Memory(
            content=text, type=memory_pb2.MEMORY_TYPE_FACT, source="bench"))
        for text in texts
    )
    start = time.perf_counter()
    summary = stub.ImportMemories(requests)
    elapsed = time.perf_counter() - start
    assert summary.stored + summary.deduplicated == len(texts), summary
    return {"memories": len(texts), "seconds": elapsed, "memories_per_s": len(texts) / elapsed}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--memories", type=int, default=10_000)
    parser.add_argument("--queries", type=int, default=300)
    args = parser.parse_args()
    texts = corpus(args.memories)
    words = np.mean([len(t.split()) for t in texts])
    with tempfile.TemporaryDirectory() as tmp:
        app = App.open(ServerConfig(listen="127.0.0.1:0", data_dir=tmp))
        server = create_server(app)
        server.start()
        try:
            emb = bench_embedding(app, args.queries)
            imp = bench_import(f"127.0.0.1:{server.port}", texts)
        finally:
            server.stop(grace=1)
    print(f"single-query embedding over {args.queries} queries: "
          f"p50 {emb['p50_ms']:.2f} ms, p95 {emb['p95_ms']:.2f} ms")
    print(f"ImportMemories: {imp['memories']} memories of ~{words:.0f} words in "
          f"{imp['seconds']:.1f} s = {imp['memories_per_s']:.0f} memories/s")


if __name__ == "__main__":
    from bench.results import recorded

    with recorded("foundation"):
        main()
