"""How long the command line takes, wall clock, as a user runs it: `memsidecar --help`, an
argument error, and `stats`, `search` and `inject` against a running sidecar.

A sidecar is started on a free port over a fresh data dir (its HTTP endpoint off) with
``--memories`` memories; each command then runs ``--runs`` times as its own process
(``.venv/bin/memsidecar ...``, the installed entry point), and the median, p90 and max wall
times are printed, with the median CPU time (user + system) of the command's process, which a
busy machine inflates far less than the wall time. Python's own start (``python -c pass``) is
printed beside them.

Run:  .venv/bin/python -m bench.cli_speed [--runs 15] [--memories 200]
"""

from __future__ import annotations

import argparse
import os
import resource
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import grpc
import numpy as np
from grpc_health.v1 import health_pb2, health_pb2_grpc
from memsidecar_client import Client

ROOT = Path(__file__).resolve().parent.parent
CLI = str(Path(sys.executable).parent / "memsidecar")
TOPICS = ("billing", "deploys", "the office", "hiking", "cooking", "music", "travel", "the team")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start(data: Path, target: str) -> subprocess.Popen[bytes]:
    proc = subprocess.Popen([CLI, "serve", "--listen", target, "--data-dir", str(data),
                             "--http-listen", "", "--log-level", "WARNING"], cwd=ROOT)
    health = health_pb2_grpc.HealthStub(grpc.insecure_channel(target))
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline:
        try:
            if health.Check(health_pb2.HealthCheckRequest(), timeout=1).status == 1:
                return proc
        except grpc.RpcError:
            time.sleep(0.2)
    proc.kill()
    raise SystemExit("the sidecar did not come up")


def timed(argv: list[str], runs: int, status: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """(wall, CPU) seconds of each run."""
    walls, cpus = [], []
    for _ in range(runs):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        begin = time.perf_counter()
        done = subprocess.run(argv, cwd=ROOT, capture_output=True)
        walls.append(time.perf_counter() - begin)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
        if done.returncode != status:
            raise SystemExit(f"{argv[1:3]} exited {done.returncode}: {done.stderr.decode()}")
    return np.array(walls), np.array(cpus)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--memories", type=int, default=200)
    args = parser.parse_args()
    target = f"127.0.0.1:{free_port()}"
    with tempfile.TemporaryDirectory() as folder:
        proc = start(Path(folder) / "data", target)
        try:
            with Client(target) as client:
                for i in range(args.memories):
                    client.upsert(f"Note {i} about {TOPICS[i % len(TOPICS)]}: item {i * 7}",
                                  "fact", agent_id="ada")
            cases = {
                "python -c pass": ([sys.executable, "-c", "pass"], 0),
                "memsidecar --help": ([CLI, "--help"], 0),
                "memsidecar search (no text)": ([CLI, "search"], 2),
                "memsidecar stats": ([CLI, "stats", "--addr", target], 0),
                "memsidecar search": ([CLI, "search", "billing notes", "--agent", "ada",
                                       "--addr", target], 0),
                "memsidecar inject": ([CLI, "inject", "what about billing?", "--agent", "ada",
                                       "--channel", "bench", "--addr", target], 0),
            }
            print(f"{args.runs} runs each, {args.memories} memories, "
                  f"{os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}")
            print(f"{'command':32} {'wall p50':>9} {'p90':>8} {'max':>8} {'CPU p50':>8}")
            for name, (argv, status) in cases.items():
                t, cpu = (x * 1000 for x in timed(argv, args.runs, status))
                print(f"{name:32} {np.median(t):7.0f}ms {np.percentile(t, 90):6.0f}ms "
                      f"{t.max():6.0f}ms {np.median(cpu):6.0f}ms")
        finally:
            proc.terminate()
            proc.wait(timeout=60)


if __name__ == "__main__":
    main()
