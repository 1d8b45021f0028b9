"""Two sidecars importing for different users into one PostgreSQL: alone vs at once.

Each writer is a process of its own (``bench/scope_writer.py``: a sidecar with its change
feed and write gates, importing acknowledged batches through ``import_batch``). Per round
and per tree, on a fresh database of a throwaway local cluster:

- *alone*: one sidecar imports ``--memories`` for user-0;
- *different users*: two sidecars import ``--memories`` each at once, for user-0 and user-1
  of one agent (their scopes differ; the agent's is shared);
- *same user*: two sidecars import for user-0 at once (one scope: the writes take turns).

The combined rate is the memories stored over the time from the start signal to the last
writer's end. ``--baseline TREE`` (e.g. ``git archive <commit> | tar -x -C TREE``) runs the
same writers on that tree's sidecar, interleaved with this tree's, round by round.

Run:  .venv/bin/python -m bench.scope_writes [--memories 1500] [--batch 100] [--rounds 3]
      [--baseline /tmp/base]
Writes bench/results/scope_writes.md.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.results import ROOT, write_results
from tests.pg.cluster import Cluster

WRITER = ROOT / "bench" / "scope_writer.py"
MODES = {"alone": ("user-0",), "different users": ("user-0", "user-1"),
         "same user": ("user-0", "user-0")}


def cpu_flags() -> str:
    text = Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace")
    wanted = {"avx2", "fma", "avx512f", "avx512bw", "avx512vl", "avx512_vnni", "avx512vnni"}
    return " ".join(sorted({w for w in text.split() if w in wanted}))


def run_writers(tree: Path, dsn: str, users: tuple[str, ...], count: int, batch: int,
                work: Path) -> dict[str, object]:
    """Start one writer per user on ``tree``, start them together; their results."""
    # One BLAS thread, as bench.fleet_serve runs its sidecars: OpenBLAS's threads spin on
    # two shared cores (a gate's 3,000-row scan took 17 ms instead of 1).
    env = dict(os.environ, PYTHONPATH=str(tree), PYTHONSAFEPATH="1", OPENBLAS_NUM_THREADS="1")
    procs = []
    for n, user in enumerate(users):
        args = [sys.executable, str(WRITER), dsn, str(work / f"w{n}"), "agent-0", user,
                str(count), str(batch), str(1000 + n)]
        procs.append(subprocess.Popen(args, env=env, stdin=subprocess.PIPE,
                                      stdout=subprocess.PIPE, text=True))
    try:
        for proc in procs:
            assert proc.stdout is not None
            line = proc.stdout.readline().strip()
            if line != "ready":
                raise RuntimeError(f"writer did not start: {line!r}")
        start = time.perf_counter()
        for proc in procs:
            assert proc.stdin is not None
            proc.stdin.write("go\n")
            proc.stdin.flush()
        reports = []
        for proc in procs:
            assert proc.stdout is not None
            reports.append(json.loads(proc.stdout.readline()))
        wall = time.perf_counter() - start
        for proc in procs:
            proc.wait(timeout=60)
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
    imported = [str(r["sidecar"]) for r in reports]
    if any(Path(i).resolve() != tree.resolve() for i in imported):
        raise RuntimeError(f"a writer imported {imported}, not {tree}")
    stored = sum(int(r["stored"]) for r in reports)
    return {"stored": stored, "wall_s": wall, "rate": stored / wall,
            "each_s": [round(float(r["elapsed_s"]), 2) for r in reports],
            "cpu_s": [round(float(r["cpu_s"]), 2) for r in reports]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memories", type=int, default=1500, help="per writer")
    parser.add_argument("--batch", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--baseline", type=Path, default=None)
    args = parser.parse_args()
    trees = {"this tree": ROOT}
    if args.baseline is not None:
        trees = {"baseline": args.baseline, **trees}
    cluster = Cluster()
    cluster.start()
    runs: dict[tuple[str, str], list[dict[str, object]]] = {}
    try:
        with tempfile.TemporaryDirectory(prefix="scope-writes-") as tmp:
            for round_ in range(args.rounds):
                for label, tree in trees.items():
                    for mode, users in MODES.items():
                        work = Path(tmp) / f"{round_}-{label}-{mode}".replace(" ", "_")
                        result = run_writers(tree, cluster.new_database(), users,
                                             args.memories, args.batch, work)
                        runs.setdefault((label, mode), []).append(result)
                        print(f"round {round_} {label:9} {mode:15} {result['rate']:7.1f}/s "
                              f"each {result['each_s']} s, CPU {result['cpu_s']} s", flush=True)
    finally:
        cluster.remove()
    write_results("scope_writes", report(runs, trees, args))


def report(runs: dict[tuple[str, str], list[dict[str, object]]], trees: dict[str, Path],
           args: argparse.Namespace) -> str:
    lines = [f"- CPU flags: {cpu_flags()}",
             f"- {args.memories} memories per writer, batches of {args.batch}, "
             f"{args.rounds} rounds, interleaved by tree", "",
             "| tree | mode | rate per round (memories/s) | median | x alone |",
             "|---|---|---|---|---|"]
    for label in trees:
        alone = statistics.median(float(str(r["rate"])) for r in runs[(label, "alone")])
        for mode in MODES:
            rates = [float(str(r["rate"])) for r in runs[(label, mode)]]
            median = statistics.median(rates)
            lines.append(f"| {label} | {mode} | {', '.join(f'{r:.0f}' for r in rates)} | "
                         f"{median:.0f} | {median / alone:.2f} |")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
