"""Start-up time and resident memory of the server over a store of N memories.

Builds (once, cached in bench/.cache/startup_rss_N/) a store of N memories with synthetic unit
embeddings (random: the figures measured here do not depend on what the vectors mean), then,
in a fresh process per start, times ``App.open`` + ``create_server`` until the health check
answers SERVING and the first Inject has answered, and reads the process's RSS. The first
start builds and saves the hnsw index (above ``exact_threshold``) and the BM25 postings; the
figures reported are of the next starts, which load them.

Run: ``.venv/bin/python bench/startup_rss.py --sizes 10000 100000 [--code-root DIR]``;
``--code-root`` measures the code of another checkout (its ``sidecar`` and ``kernels`` are
imported first), e.g. a worktree of an older commit.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
CACHE = ROOT / "bench" / ".cache"
WORDS = ("deploy billing review garden marathon tomato french budget kitchen cat release "
         "roadmap invoice tea coffee travel paint brakes pasta meeting").split()


def build(n: int, dim: int) -> Path:
    import numpy as np

    from bench.store_build import build_store
    from sidecar.embedding.config import EmbeddingConfig

    data = CACHE / f"startup_rss_{n}_{EmbeddingConfig().model}"
    data.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(n)
    vectors = rng.standard_normal((n, dim)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    words = rng.integers(0, len(WORDS), size=(n, 12))
    texts = [" ".join(WORDS[w] for w in row) + f" note {i}" for i, row in enumerate(words)]
    build_store(data, [f"m{i}" for i in range(n)], texts, vectors,
                model=EmbeddingConfig().model)  # recorded as the default model's: no re-embed
    return data


def rss_mb() -> dict[str, float]:
    status = Path("/proc/self/status").read_text()
    fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
    return {key: int(fields[key].split()[0]) / 1024 for key in ("VmRSS", "VmHWM")}


def measure(data: str, code_root: str) -> None:
    """In this (fresh) process: open the server over ``data`` with the code of ``code_root``
    (this checkout when empty), print one JSON line."""
    if code_root:
        sys.path.insert(0, code_root)
    import grpc
    from grpc_health.v1 import health_pb2, health_pb2_grpc
    from memsidecar.v1 import injection_pb2, injection_pb2_grpc

    import sidecar
    from sidecar.api.server import create_server
    from sidecar.api.server_config import ServerConfig
    from sidecar.app import App
    from sidecar.embedding import Embedder
    from sidecar.embedding.config import EmbeddingConfig
    from sidecar.embedding.models import model_files
    from sidecar.metrics.config import HttpConfig

    name = EmbeddingConfig().model
    embedder = Embedder(model_files(name))
    embedder.embed_one("warm up")
    before = rss_mb()
    start = time.perf_counter()
    config = ServerConfig(listen="127.0.0.1:0", data_dir=data, http=HttpConfig(listen=""))
    app = App.open(config, embedder=embedder)
    server = create_server(app)
    server.start()
    with grpc.insecure_channel(f"127.0.0.1:{server.port}") as channel:
        stub = health_pb2_grpc.HealthStub(channel)
        status = stub.Check(health_pb2.HealthCheckRequest(), wait_for_ready=True).status
        serving_s = time.perf_counter() - start
        injection_pb2_grpc.MemoryInjectionStub(channel).Inject(injection_pb2.InjectRequest(
            agent_id="bench", channel_id="startup", text="what did we say about the budget?",
            source="user"))
        inject_s = time.perf_counter() - start
    assert status == health_pb2.HealthCheckResponse.SERVING
    ready = app.vectors.wait_ready(3600) if app.vectors is not None else False
    ready_s = time.perf_counter() - start
    after = rss_mb()
    print(json.dumps({
        "code": str(Path(sidecar.__file__).parent.parent), "serving_s": round(serving_s, 2),
        "first_inject_s": round(inject_s, 2),
        "hnsw_ready_s": round(ready_s, 2), "hnsw": ready,
        "rss_before_open_mb": round(before["VmRSS"]), "rss_mb": round(after["VmRSS"]),
        "peak_rss_mb": round(after["VmHWM"]),
    }))
    server.stop(grace=1)


def start_once(data: Path, code_root: str) -> dict[str, object]:
    out = subprocess.run(
        [sys.executable, __file__, "--measure", str(data), "--code-root", code_root],
        check=True, capture_output=True, text=True).stdout
    result: dict[str, object] = json.loads(out.strip().splitlines()[-1])
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--starts", type=int, default=3, help="measured starts per size")
    parser.add_argument("--code-root", default="", help="checkout whose code to measure")
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--measure", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure:
        measure(args.measure, args.code_root)
        return
    print(f"load average {os.getloadavg()[0]:.2f}; code {args.code_root or ROOT}")
    for n in args.sizes:
        data = build(n, args.dim)
        first = start_once(data, args.code_root)  # builds and saves the hnsw index if needed
        runs = [start_once(data, args.code_root) for _ in range(args.starts)]
        print(json.dumps({"memories": n, "first_start": first, "starts": runs}))


if __name__ == "__main__":
    main()
