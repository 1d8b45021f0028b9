"""FindConsolidationCandidates on one scope of N memories: time and peak RSS of the server.

Each size gets a store of N memories in the shared scope (built once from synthetic unit
embeddings, cached in ``bench/.cache/``): clustered rows with a common component, so nearly
every pair has a positive cosine, as sentence embeddings do. A real ``memsidecar serve``
process opens it; then one ``FindConsolidationCandidates(scope="", floor=--floor,
limit=--limit)`` is timed at the client, and the server's peak RSS during the call is read
from ``/proc/PID/status`` (``VmHWM``, reset through ``clear_refs`` right before the call)
minus its RSS before the call.

``--root DIR`` serves the code in DIR (default: this checkout; a frozen copy keeps edits made
during a long run out of it); ``--before DIR`` serves another checkout (e.g. the code before a
change) on the same stores, interleaved with this one size by size, for sizes up to
``--before-max`` (the code that kept every pair needed ~2.6 GB at 4,500 memories and would need
tens of GB at 20,000).

Run:  .venv/bin/python -m bench.consolidation_scale [--sizes 1500,3000,4500,20000]
      [--floor 0.0] [--limit 1] [--root DIR] [--before DIR] [--before-max 4500]
Writes bench/results/consolidation_scale.md.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import time
from pathlib import Path

import grpc
import numpy as np
from memsidecar.v1 import vault_pb2, vault_pb2_grpc

from bench.overload import serve
from bench.results import recorded
from bench.store_build import build_store
from sidecar.embedding.models import INT8
from sidecar.records import MemoryType

ROOT = Path(__file__).resolve().parent.parent
CACHE = ROOT / "bench" / ".cache"
DIM = 384


def embeddings(n: int, seed: int = 7) -> np.ndarray:
    rng = np.random.default_rng(seed)
    common = rng.standard_normal(DIM)
    centres = rng.standard_normal((max(1, n // 20), DIM))
    rows = (1.5 * common / np.linalg.norm(common) * np.sqrt(DIM) / 4
            + centres[rng.integers(0, len(centres), n)] + 0.6 * rng.standard_normal((n, DIM)))
    unit: np.ndarray = (rows / np.linalg.norm(rows, axis=1, keepdims=True)).astype(np.float32)
    return unit


def store(n: int) -> Path:
    data = CACHE / f"consolidation-{n}"
    if not (data / "memsidecar.sqlite3").exists():
        data.mkdir(parents=True, exist_ok=True)
        ids = [f"m{i:06d}" for i in range(n)]
        texts = [f"synthetic memory number {i}" for i in range(n)]
        build_store(data, ids, texts, embeddings(n), MemoryType.FACT, model=INT8)
    return data


def status_kb(pid: int, key: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1])
    raise KeyError(key)


def measure(data: Path, root: Path, floor: float, limit: int) -> tuple[float, float, int, str]:
    """(seconds, peak RSS increase in MB, pairs returned, status) of one call."""
    proc, port = serve(data, root, http_port=0)
    try:
        channel = grpc.insecure_channel(f"127.0.0.1:{port}")
        stub = vault_pb2_grpc.VaultStub(channel)
        time.sleep(1.0)  # let the start-up's background work settle
        Path(f"/proc/{proc.pid}/clear_refs").write_text("5")  # VmHWM := VmRSS
        before = status_kb(proc.pid, "VmRSS")
        start = time.perf_counter()
        try:
            reply = stub.FindConsolidationCandidates(vault_pb2.FindConsolidationCandidatesRequest(
                scope="", floor=floor, limit=limit), timeout=900)
            pairs, code = len(reply.pairs), "OK"
        except grpc.RpcError as err:
            pairs, code = 0, err.code().name
        seconds = time.perf_counter() - start
        peak = status_kb(proc.pid, "VmHWM")
        channel.close()
        return seconds, (peak - before) / 1024, pairs, code
    finally:
        proc.terminate()
        proc.wait(timeout=60)


def commit(root: Path) -> str:
    done = subprocess.run(["git", "rev-parse", "--short=12", "HEAD"], cwd=root,
                          capture_output=True, text=True, check=False)
    return done.stdout.strip() or "?"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="1500,3000,4500,20000")
    parser.add_argument("--floor", type=float, default=0.0)
    parser.add_argument("--limit", type=int, default=1)
    parser.add_argument("--root", type=Path, default=ROOT)
    parser.add_argument("--before", type=Path, default=None)
    parser.add_argument("--before-max", type=int, default=4500)
    args = parser.parse_args()
    sizes = [int(x) for x in args.sizes.split(",")]
    roots = [("after", args.root)] + ([("before", args.before)] if args.before else [])
    flags = sorted(set(open("/proc/cpuinfo").read().split()) & {
        "avx", "avx2", "avx512f", "avx512_vnni", "avx512bw", "fma"})
    with recorded("consolidation_scale"):
        print(f"FindConsolidationCandidates(scope='', floor={args.floor}, limit={args.limit}); "
              f"{os.cpu_count()} CPUs, flags {' '.join(flags)}")
        for name, root in roots:
            print(f"- {name}: {root} at {commit(root)}")
        print("\n| code | memories | pairs compared | time s | peak RSS +MB | pairs returned | "
              "status |\n|---|---:|---:|---:|---:|---:|---|")
        for n in sizes:
            data = store(n)
            for name, root in roots:
                if name == "before" and n > args.before_max:
                    print(f"| {name} | {n:,} | {n * (n - 1) // 2:,} | not run (above "
                          f"--before-max) | | | |")
                    continue
                seconds, peak, pairs, code = measure(data, root, args.floor, args.limit)
                print(f"| {name} | {n:,} | {n * (n - 1) // 2:,} | {seconds:.2f} | {peak:.0f} | "
                      f"{pairs} | {code} |", flush=True)


if __name__ == "__main__":
    main()
