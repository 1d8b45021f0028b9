"""Two sidecars importing for different users into one PostgreSQL: alone vs at once.

Each writer is a process of its own (``bench/scope_writer.py``: a sidecar with its change
feed and write gates, importing acknowledged batches through ``import_batch``). Per round
and per tree, on a fresh database of a throwaway local cluster:

- *alone*: one sidecar imports ``--memories`` for user-0;
- *different users*: two sidecars import ``--memories`` each at once, for user-0 and user-1
  of one agent (their scopes differ; the agent's is shared);
- *same user*: two sidecars import for user-0 at once (one scope: the writes take turns).

The combined rate is the memories stored over the time from the start signal to the last
writer's end. A rate needs CPU that other jobs on a shared machine take, so the run also
samples, every 10 ms, how many writers wait for an advisory lock (the write lock: the
store's before, a scope's after): the share of the writers' time spent queued behind
another. ``--residency scopes`` has each sidecar hold only the scopes it uses (decision
0022): the other's writes are then noted, not applied. ``--baseline TREE`` (e.g.
``git archive <commit> | tar -x -C TREE``) runs the same writers on that tree's sidecar,
interleaved with this tree's, round by round.

Run:  .venv/bin/python -m bench.scope_writes [--memories 1500] [--batch 100] [--rounds 3]
      [--residency auto|scopes] [--baseline /tmp/base]
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
import threading
import time
from pathlib import Path

import psycopg

from bench.results import ROOT, write_results
from bench.trees import source_tree
from tests.pg.cluster import Cluster

WRITER = ROOT / "bench" / "scope_writer.py"
MODES = {"alone": ("user-0",), "different users": ("user-0", "user-1"),
         "same user": ("user-0", "user-0")}
Run = dict[str, float | list[float]]


def cpu_flags() -> str:
    text = Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace")
    wanted = {"avx2", "fma", "avx512f", "avx512bw", "avx512vl", "avx512_vnni", "avx512vnni"}
    return " ".join(sorted({w for w in text.split() if w in wanted}))


class LockWaits(threading.Thread):
    """Samples how many backends of ``dsn``'s database wait for an advisory lock, and the
    CPU time of those backends (``/proc``: the cluster runs on this machine)."""

    def __init__(self, dsn: str, every_s: float = 0.01) -> None:
        super().__init__(daemon=True)
        self.dsn, self.every_s = dsn, every_s
        self.samples: list[int] = []
        self.backend_cpu: dict[int, float] = {}  # pid -> its CPU seconds, last read
        self.stop = threading.Event()
        self._conn: psycopg.Connection[tuple[object, ...]] = psycopg.connect(
            dsn, autocommit=True)

    def read_backends(self) -> dict[int, float]:
        """Read the backends' CPU now (before the run starts); what was read."""
        self._backends(self._conn)
        return dict(self.backend_cpu)

    def run(self) -> None:
        with self._conn as conn:
            while not self.stop.wait(self.every_s):
                row = conn.execute(
                    "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT "
                    "granted AND database = (SELECT oid FROM pg_database WHERE "
                    "datname = current_database())").fetchone()
                self.samples.append(int(row[0]) if row else 0)
                if len(self.samples) % 20 == 0:
                    self._backends(conn)
            self._backends(conn)

    def _backends(self, conn: psycopg.Connection[tuple[object, ...]]) -> None:
        pids = conn.execute("SELECT pid FROM pg_stat_activity WHERE datname = "
                            "current_database() AND pid != pg_backend_pid()").fetchall()
        for (pid,) in pids:
            seconds = _cpu_seconds(int(str(pid)))
            if seconds is not None:
                self.backend_cpu[int(str(pid))] = seconds

    def share(self, writers: int) -> float:
        """The writers' mean share of time waiting."""
        return sum(self.samples) / max(1, len(self.samples)) / writers


def _cpu_seconds(pid: int) -> float | None:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def run_writers(tree: Path, dsn: str, users: tuple[str, ...], count: int, batch: int,
                work: Path, residency: str) -> Run:
    """Start one writer per user on ``tree``, start them together; their results."""
    # One BLAS thread, as bench.fleet_serve runs its sidecars: OpenBLAS's threads spin on
    # two shared cores (a gate's 3,000-row scan took 17 ms instead of 1).
    env = dict(os.environ, PYTHONPATH=str(tree), PYTHONSAFEPATH="1", OPENBLAS_NUM_THREADS="1")
    procs = []
    for n, user in enumerate(users):
        args = [sys.executable, str(WRITER), dsn, str(work / f"w{n}"), "agent-0", user,
                str(count), str(batch), str(1000 + n), residency]
        procs.append(subprocess.Popen(args, env=env, stdin=subprocess.PIPE,
                                      stdout=subprocess.PIPE, text=True))
    waits = LockWaits(dsn)
    try:
        for proc in procs:
            assert proc.stdout is not None
            line = proc.stdout.readline().strip()
            if line != "ready":
                raise RuntimeError(f"writer did not start: {line!r}")
        before = waits.read_backends()
        waits.start()
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
        waits.stop.set()
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
    waits.join()
    imported = [str(r["sidecar"]) for r in reports]
    if any(Path(i).resolve() != tree.resolve() for i in imported):
        raise RuntimeError(f"a writer imported {imported}, not {tree}")
    stored = sum(int(r["stored"]) for r in reports)
    cpu = sum(float(r["cpu_s"]) for r in reports) + sum(
        seconds - before.get(pid, 0.0) for pid, seconds in waits.backend_cpu.items())
    return {"stored": stored, "wall_s": wall, "rate": stored / wall,
            "cpu_per_k": 1000 * cpu / stored, "cores": cpu / wall,
            "waiting": waits.share(len(users)), "load": os.getloadavg()[0],
            "each_s": [round(float(r["elapsed_s"]), 2) for r in reports],
            "cpu_s": [round(float(r["cpu_s"]), 2) for r in reports]}


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--memories", type=int, default=1500, help="per writer")
    parser.add_argument("--batch", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--residency", choices=("auto", "scopes"), default="auto")
    parser.add_argument("--baseline", type=Path, default=None)
    args = parser.parse_args()
    trees = {"this tree": ROOT}
    if args.baseline is not None:
        trees = {"baseline": source_tree(args.baseline), **trees}
    cluster = Cluster()
    cluster.start()
    runs: dict[tuple[str, str], list[Run]] = {}
    try:
        with tempfile.TemporaryDirectory(prefix="scope-writes-") as tmp:
            for round_ in range(args.rounds):
                for label, tree in trees.items():
                    for mode, users in MODES.items():
                        work = Path(tmp) / f"{round_}-{label}-{mode}".replace(" ", "_")
                        result = run_writers(tree, cluster.new_database(), users,
                                             args.memories, args.batch, work, args.residency)
                        runs.setdefault((label, mode), []).append(result)
                        print(f"round {round_} {label:9} {mode:15} {result['rate']:7.1f}/s "
                              f"waiting {result['waiting']:4.0%} each {result['each_s']} s, "
                              f"CPU {result['cpu_s']} s, {result['cpu_per_k']:.1f} CPU-s per "
                              f"1,000 with the backends, {result['cores']:.2f} cores, "
                              f"load {result['load']:.1f}",
                              flush=True)
    finally:
        cluster.remove()
    write_results("scope_writes", report(runs, trees, args))


def _median(runs: list[Run], key: str) -> float:
    return statistics.median(float(str(r[key])) for r in runs)


def report(runs: dict[tuple[str, str], list[Run]], trees: dict[str, Path],
           args: argparse.Namespace) -> str:
    lines = [f"- CPU flags: {cpu_flags()}",
             f"- {args.memories} memories per writer, batches of {args.batch}, "
             f"{args.rounds} rounds, interleaved by tree, residency {args.residency}",
             f"- baseline: {args.baseline or 'none'}", "",
             "| tree | mode | memories/s per round | median | x alone (median of the rounds') "
             "| writers waiting for a lock (median share of their time) "
             "| CPU-s per 1,000 (writers and their backends; median) | cores they got (median) "
             "| load average per round |",
             "|---|---|---|---|---|---|---|---|---|"]
    for label in trees:
        alone = [float(str(r["rate"])) for r in runs[(label, "alone")]]
        for mode in MODES:
            done = runs[(label, mode)]
            ratio = statistics.median(float(str(r["rate"])) / a
                                      for r, a in zip(done, alone, strict=True))
            rates = ", ".join(f"{float(str(r['rate'])):.0f}" for r in done)
            loads = ", ".join(f"{float(str(r['load'])):.1f}" for r in done)
            median = _median(done, "rate")
            lines.append(f"| {label} | {mode} | {rates} | {median:.0f} | {ratio:.2f} "
                         f"| {_median(done, 'waiting'):.0%} | {_median(done, 'cpu_per_k'):.1f} "
                         f"| {_median(done, 'cores'):.2f} | {loads} |")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
