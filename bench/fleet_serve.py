"""A fleet's store served by a real ``memsidecar serve``: start-up, RSS, cold and warm Injects.

Over a store made by ``bench.fleet_store`` (its spec is read from the store):
1. A first start, which builds the index files the data dir lacks (BM25 postings, the hnsw
   index in the background: waited for through ``memsidecar_vector_index_building``, unless
   ``--no-settle``), then ``--starts`` restarts: seconds from the process's launch to health
   SERVING, and its RSS then (``VmRSS``).
2. On the last start, ``--active`` users (drawn by the seed, over every agent; 0: none)
   each talk in a channel of their own, ``--turns`` Injects each, round robin; a turn's
   text is the next CoQA question of the user's stories, sent with its ``user_id``. A user's
   first Inject is its scope's first use since the start (cold), the later ones warm:
   p50/p99 of each at the client, the process's RSS after them, and the server's metrics on
   resident scopes, their loads and evictions where it exposes them (names holding
   ``resident``, ``evict`` or ``scope``; else "n/a"). The cold calls of scopes of 50 to 150
   memories are reported apart (and again those whose agent's own scope an earlier call
   loaded: only the user's scope is cold), and the share of the store file in the OS page cache
   (SQLite: a cold scope's rows come from the disk or from there; ``--page-cache`` drops
   or fills it first). ``--beside N``: a second client keeps N more users' scopes busy while
   the first Injects load theirs (their p50/p99: what loads cost the calls of held scopes).
The server's RSS is watched throughout: above ``--rss-limit-mb`` it is stopped and the run
reports so (a shared machine is not pushed into swapping). Its output of the last start is
in ``DATA_DIR/fleet_serve.log``.

``--sidecars N`` (PostgreSQL only): N sidecars serve the one store, as a fleet does, each with
its own data dir (``DATA_DIR/sidecar-K``) and each started in turn; a user talks to one of
them (``user-U`` to sidecar U mod N). The calls go one at a time, round robin as above: on one
host, sidecars serving at once would measure how its cores are shared, where a fleet gives
each its own. The report gives each sidecar's start, RSS and scope metrics, and each one's
cold and warm calls. ``--roots A B`` serves checkout A from the first sidecar and B from the
second: an A/B in one run, the machine's load falling on both alike.

Run:  .venv/bin/python -m bench.fleet_serve --data-dir DIR [--dsn postgresql://...]
      [--active 500] [--turns 5] [--starts 2] [--no-settle] [--config FILE] [--root DIR]
      [--rss-limit-mb 8000] [--beside 10] [--page-cache drop|fill] [--label NAME]
      [--sidecars 2 [--roots DIR DIR]]
``--dsn``: the store is that PostgreSQL database (``--data-dir`` then holds the sidecar's
own files); ``--config``: the sidecar's config file (e.g. a ``[retrieval]`` budget);
``--root``: serve the code of another checkout (its own tree first on the path, checked
before the users talk). Writes bench/results/fleet_serve_<N>.md
(``_postgres`` after N with ``--dsn``, then ``_<label>`` with ``--label``).
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import mmap
import os
import re
import subprocess
import sys
import threading
import time
import tomllib
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import grpc
import numpy as np
import tomlkit
from grpc_health.v1 import health_pb2, health_pb2_grpc
from memsidecar.v1 import injection_pb2, injection_pb2_grpc

from bench.agent_loop_replay import cpu_flags
from bench.consolidation_scale import commit
from bench.fleet_content import Fleet, Pool, owners, scope_stories
from bench.fleet_store import CACHE, COQA, open_target, pool_for, recorded_fleet
from bench.replay_longmemeval import free_port
from bench.results import ROOT, write_results
from sidecar.api.server_config import ServerConfig
from sidecar.embedding.config import EmbeddingConfig

SCOPE_METRIC = re.compile(r"^memsidecar_\w*(?:resident|evict|scope)\w*(?:\{[^}]*\})? \S+$")
POLL_S = 0.05
INDEX_FILES = ("lexical.npz", "vectors.hnsw")  # what a first start builds when missing
LOG = "fleet_serve.log"  # the sidecar's output, in its data dir (the last start's)
NEAR = (50, 150)  # the cold calls reported apart: scopes of about 100 memories


@dataclass
class Sidecar:
    """A ``memsidecar serve`` process over a data dir, its RSS watched."""

    data_dir: Path
    root: Path
    config: Path | None
    rss_limit_mb: float
    port: int = field(default_factory=free_port)
    http_port: int = field(default_factory=free_port)
    over_limit: bool = False
    peak_mb: float = 0.0

    @contextlib.contextmanager
    def running(self) -> Iterator[float]:
        """Start it; yields the seconds to SERVING; stops it on exit."""
        log = open(self.data_dir / LOG, "wb")  # noqa: SIM115 (closed when it stops)
        command = [sys.executable, "-m", "sidecar", "serve", "--listen", f"127.0.0.1:{self.port}",
                   "--http-listen", f"127.0.0.1:{self.http_port}", "--data-dir",
                   str(self.data_dir), "--log-level", "WARNING"]
        begin = time.perf_counter()
        self.proc = subprocess.Popen(
            [*command, *(["--config", str(self.config)] if self.config else [])], cwd=self.root,
            stdout=log, stderr=subprocess.STDOUT, env=served_env(self.root))
        stop = threading.Event()
        watcher = threading.Thread(target=self._watch, args=(stop,), daemon=True)
        watcher.start()
        self.channel = grpc.insecure_channel(f"127.0.0.1:{self.port}")
        try:
            yield self._serving(begin, log.name)
        except (grpc.RpcError, OSError) as err:  # a call or /metrics, e.g. over the RSS limit
            code = getattr(err, "code", lambda: None)()
            raise RuntimeError(f"the sidecar failed a call ({type(err).__name__} "
                               f"{getattr(code, 'name', '')}; RSS over the "
                               f"limit: {self.over_limit}); its log: {log.name}") from err
        finally:
            stop.set()
            self.channel.close()
            self.proc.terminate()
            self.proc.wait(timeout=600)
            log.close()

    def _serving(self, begin: float, log: str) -> float:
        health = health_pb2_grpc.HealthStub(self.channel)
        while self.proc.poll() is None and not self.over_limit:
            with contextlib.suppress(grpc.RpcError):
                if health.Check(health_pb2.HealthCheckRequest(), timeout=1).status == 1:
                    return time.perf_counter() - begin
            time.sleep(POLL_S)
        raise RuntimeError(f"the sidecar stopped before SERVING (RSS over the limit: "
                           f"{self.over_limit}); its log: {log}")

    def _watch(self, stop: threading.Event) -> None:
        while not stop.wait(0.2):
            rss = self.rss_mb()
            self.peak_mb = max(self.peak_mb, rss)
            if rss > self.rss_limit_mb:
                self.over_limit = True
                self.proc.kill()
                return

    def rss_mb(self) -> float:
        with contextlib.suppress(OSError):
            for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
        return 0.0

    def metrics(self) -> dict[str, float]:
        """Every sample of ``/metrics`` by name and labels."""
        url = f"http://127.0.0.1:{self.http_port}/metrics"
        text = urllib.request.urlopen(url, timeout=30).read().decode()
        samples = {}
        for line in text.splitlines():
            if line and not line.startswith("#"):
                name, value = line.rsplit(" ", 1)
                samples[name] = float(value)
        return samples

    def settle(self, timeout_s: float) -> float:
        """Seconds until the background index build is over (its gauge 0 or absent)."""
        begin = time.perf_counter()
        while self.metrics().get("memsidecar_vector_index_building", 0.0) > 0:
            if time.perf_counter() - begin > timeout_s:
                raise RuntimeError(f"the vector index was still building after {timeout_s} s")
            time.sleep(1.0)
        return time.perf_counter() - begin


def served_env(root: Path) -> dict[str, str]:
    """The environment of a process that imports ``root``'s code: first on its path and no
    working directory put before it (PYTHONSAFEPATH; whatever this process was started
    with), else the editable install's tree would serve."""
    return {**os.environ, "OPENBLAS_NUM_THREADS": "1", "PYTHONPATH": str(root.resolve()),
            "PYTHONSAFEPATH": "1"}


def imported_from(root: Path) -> str:
    """Where a process started as the sidecar is imports ``sidecar`` from (checked)."""
    found = subprocess.run([sys.executable, "-c", "import sidecar; print(sidecar.__file__)"],
                           cwd=root, env=served_env(root), capture_output=True, text=True,
                           check=True).stdout.strip()
    if not Path(found).resolve().is_relative_to(root.resolve()):
        raise RuntimeError(f"the sidecar served from {root} would import {found}")
    return str(Path(found).parent)


def scope_metrics(samples: dict[str, float]) -> dict[str, float]:
    """The samples about resident scopes (a counter's creation time left out)."""
    return {name: value for name, value in samples.items()
            if SCOPE_METRIC.match(f"{name} {value}") and not name.endswith("_created")}


@dataclass(frozen=True)
class User:
    agent: str
    user: str
    questions: list[str]  # the CoQA questions of the stories its memories come from
    memories: int  # in its scope


def conversations(fleet: Fleet, pool: Pool, active: int, seed: int) -> list[User]:
    """``active`` users drawn by ``seed``, with their questions in turn order, story after
    story."""
    owner_of = owners(fleet)
    stories = scope_stories(fleet, pool, owner_of)
    counts = np.bincount(owner_of, minlength=fleet.users)
    chosen = np.random.default_rng([seed, 9]).choice(fleet.users, active, replace=False)
    return [User(fleet.agent_of(u), f"user-{u}",
                 [q for story in stories[u] for q in pool.questions[story]], int(counts[u]))
            for u in sorted(chosen.tolist())]


@dataclass
class Talk:
    """Client-side ms of each Inject: a user's first (with its scope's size) and later ones,
    and the calls of the users kept warm beside the first ones (``--beside``)."""

    # (memories, the agent's own scope used by an earlier call, ms, the sidecar's index)
    cold: list[tuple[int, bool, float, int]] = field(default_factory=list)
    warm: list[tuple[float, int]] = field(default_factory=list)
    beside: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)  # the second client's failed calls
    cold_stages: list[list[float]] = field(default_factory=list)  # server ms (inject_once)
    warm_stages: list[list[float]] = field(default_factory=list)


STAGES = ("embed", "pinned", "search", "dedup", "budget", "format", "persist")


def serving(sidecars: list[Sidecar], user: User) -> Sidecar:
    """The sidecar of the fleet that ``user`` talks to (``user-U``: sidecar U mod N)."""
    return sidecars[index_of(sidecars, user)]


def index_of(sidecars: list[Sidecar], user: User) -> int:
    return int(user.user.rsplit("-", 1)[1]) % len(sidecars)


def inject_once(sidecar: Sidecar, user: User, turn: int,
                stages: list[list[float]] | None = None) -> float:
    """The call's ms at the client; the server's (elapsed, then each of ``STAGES``) ms
    appended to ``stages`` when given."""
    request = injection_pb2.InjectRequest(
        agent_id=user.agent, user_id=user.user, channel_id=f"{user.user}-bench",
        source="user", text=user.questions[turn % len(user.questions)])
    start = time.perf_counter()
    reply = injection_pb2_grpc.MemoryInjectionStub(sidecar.channel).Inject(request, timeout=60)
    ms = (time.perf_counter() - start) * 1000
    if stages is not None:
        took = reply.stats.stages
        stages.append([reply.stats.elapsed_us / 1000,
                       *(getattr(took, f"{name}_us") / 1000 for name in STAGES)])
    return ms


def talk(sidecars: list[Sidecar], users: list[User], turns: int, beside: list[User]) -> Talk:
    """Round robin over the users, one Inject each per round, each to its own sidecar.
    During the first round (every scope cold), a second client talks with the ``beside``
    users, whose scopes it loaded first: their calls measure what the loads cost the scopes
    already held."""
    out = Talk()
    for user in beside:
        inject_once(serving(sidecars, user), user, 0)
    done = threading.Event()

    begin = time.perf_counter()

    def keep_warm() -> None:
        turn = 1
        while not done.is_set():
            for user in beside:
                try:
                    out.beside.append(inject_once(serving(sidecars, user), user, turn))
                except grpc.RpcError as err:  # reported with the figures
                    out.errors.append(f"{err.code().name} after "  # type: ignore[attr-defined]
                                      f"{time.perf_counter() - begin:.1f} s")
            turn += 1

    second = threading.Thread(target=keep_warm, daemon=True)
    if beside:
        second.start()
    agents = {user.agent for user in beside}  # whose own scope an earlier call loaded
    try:
        for user in users:
            ms = inject_once(serving(sidecars, user), user, 0, out.cold_stages)
            out.cold.append((user.memories, user.agent in agents, ms,
                             index_of(sidecars, user)))
            agents.add(user.agent)
    finally:
        done.set()
        if beside:
            second.join(120)
    for turn in range(1, turns):
        out.warm += [(inject_once(serving(sidecars, user), user, turn, out.warm_stages),
                      index_of(sidecars, user)) for user in users]
    return out


def store_file(args: argparse.Namespace) -> Path | None:
    return None if args.dsn else ServerConfig(data_dir=str(args.data_dir)).db_path


def page_cached(path: Path | None) -> float:
    """The share of ``path``'s pages in the OS page cache (mincore; 0 when unknown): a cold
    scope's rows come from the disk or from there."""
    if path is None or not path.exists() or not path.stat().st_size:
        return 0.0
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mmap.restype = ctypes.c_void_p
    libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,
                          ctypes.c_int, ctypes.c_long]
    size, page = path.stat().st_size, mmap.PAGESIZE
    pages = (size + page - 1) // page
    with open(path, "rb") as f:
        addr = libc.mmap(None, size, mmap.PROT_READ, mmap.MAP_SHARED, f.fileno(), 0)
        if addr in (None, ctypes.c_void_p(-1).value):
            return 0.0
        try:
            vec = (ctypes.c_ubyte * pages)()
            if libc.mincore(ctypes.c_void_p(addr), ctypes.c_size_t(size), vec):
                return 0.0
            return sum(b & 1 for b in vec) / pages
        finally:
            libc.munmap(ctypes.c_void_p(addr), ctypes.c_size_t(size))


def set_page_cache(path: Path | None, how: str) -> None:
    """"drop": ask the OS to forget ``path``'s cached pages (cold scopes read from disk);
    "fill": read the whole file once (from the OS page cache as far as it keeps it)."""
    if path is None or not path.exists() or how == "as-is":
        return
    fd = os.open(path, os.O_RDONLY)
    try:
        if how == "drop":
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        while how == "fill" and os.read(fd, 1 << 23):
            pass
    finally:
        os.close(fd)


def pct(values: list[float], q: float) -> str:
    return f"{np.percentile(values, q):.1f}" if values else "-"


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--data-dir", type=Path, required=True, help="the sidecar's data dir")
    p.add_argument("--dsn", default="", help="the store is this PostgreSQL database")
    p.add_argument("--active", type=int, default=500, help="users served")
    p.add_argument("--turns", type=int, default=5, help="Injects per user")
    p.add_argument("--starts", type=int, default=2, help="restarts measured")
    p.add_argument("--config", type=Path, help="the sidecar's config file")
    p.add_argument("--root", type=Path, default=ROOT, help="the checkout served")
    p.add_argument("--rss-limit-mb", type=float, default=8000)
    p.add_argument("--settle", action=argparse.BooleanOptionalAction, default=True,
                   help="after the first start, wait for the background index build (its "
                   "files then serve the restarts)")
    p.add_argument("--beside", type=int, default=0,
                   help="users a second client keeps talking with while the others' first "
                   "Injects load their scopes")
    p.add_argument("--page-cache", choices=("as-is", "drop", "fill"), default="as-is",
                   help="before the users talk, drop the store file from the OS page cache "
                   "(SQLite: cold scopes read from disk) or fill it (read the file once)")
    p.add_argument("--sidecars", type=int, default=1,
                   help="sidecars serving the store (PostgreSQL only), each user one of them")
    p.add_argument("--roots", type=Path, nargs="+", default=[],
                   help="with --sidecars: the checkout each sidecar serves (instead of --root)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--label", default="", help="appended to the results file's name")
    p.add_argument("--data", type=Path, default=COQA, help="CoQA json the store was made from")
    p.add_argument("--cache", type=Path, default=CACHE, help="where the pool's vectors are kept")
    return p


def sidecar_config(config: Path | None, dsn: str, folder: Path) -> Path | None:
    """``config``, with the PostgreSQL store ``dsn`` when given (a file written in
    ``folder``)."""
    if not dsn:
        return config
    data = tomllib.loads(config.read_text(encoding="utf-8")) if config else {}
    data.setdefault("store", {}).update(backend="postgres", dsn=dsn)
    path = folder / "fleet_serve.toml"
    path.write_text(tomlkit.dumps(data), encoding="utf-8")
    return path


def run(args: argparse.Namespace) -> tuple[Fleet, str]:
    """Measure; the store's spec and the report (markdown)."""
    db = open_target(args.data_dir, args.dsn)
    try:
        fleet = recorded_fleet(db)
    finally:
        db.close()
    pool = pool_for(args.data, EmbeddingConfig().model, args.cache, fleet.stories)
    drawn = conversations(fleet, pool, min(args.active + args.beside, fleet.users), args.seed)
    beside = drawn[::max(1, len(drawn) // args.beside)][:args.beside] if args.beside else []
    users = [u for u in drawn if u not in beside]
    args.data_dir.mkdir(parents=True, exist_ok=True)
    config = sidecar_config(args.config, args.dsn, args.data_dir)
    dirs = ([args.data_dir] if args.sidecars == 1 else
            [args.data_dir / f"sidecar-{k}" for k in range(args.sidecars)])
    roots = args.roots or [args.root] * len(dirs)
    sidecars = [Sidecar(d, root, config, args.rss_limit_mb)
                for d, root in zip(dirs, roots, strict=True)]
    for d in dirs:
        d.mkdir(exist_ok=True)
    lines = [f"store: {fleet} on {'PostgreSQL' if args.dsn else 'SQLite'}",
             "served: " + "; ".join(f"{root} at {commit(root)} (imports {imported_from(root)})"
                                    for root in dict.fromkeys(roots)) + "; "
             f"config: {args.config or 'defaults'}; "
             f"{os.cpu_count()} CPUs, flags {cpu_flags()}", "",
             "| start | sidecar | SERVING s | RSS MB | index build s | load average |",
             "|---|---|---|---|---|---|"]
    try:
        for start in range(args.starts + 1):
            with contextlib.ExitStack() as running:
                for k, sidecar in enumerate(sidecars):
                    present = [f for f in INDEX_FILES if (sidecar.data_dir / f).exists()]
                    first = (f"first ({', '.join(present)} present)" if present
                             else "first (builds indexes)")
                    serving_s = running.enter_context(sidecar.running())
                    rss = sidecar.rss_mb()
                    built = "-"  # not waited for
                    if start == 0 and args.settle:
                        built = f"{sidecar.settle(7200):.0f}"
                    name = first if start == 0 else f"restart {start}"
                    lines.append(f"| {name} | {k + 1} | {serving_s:.2f} | {rss:.0f} | {built} | "
                                 f"{os.getloadavg()[0]:.1f} |")
                    print(lines[-1], flush=True)
                if start == args.starts and users:
                    set_page_cache(store_file(args), args.page_cache)
                    lines.append(f"store file in the OS page cache: "
                                 f"{page_cached(store_file(args)):.0%}")
                    lines.append(serve_users(sidecars, users, args.turns, beside))
    except RuntimeError as err:
        peaks = ", ".join(f"{s.peak_mb:.0f}" for s in sidecars)
        lines.append(f"\nstopped: {err} (peak RSS {peaks} MB)")
    return fleet, "\n".join(lines)


def serve_users(sidecars: list[Sidecar], users: list[User], turns: int,
                beside: list[User]) -> str:
    before = [s.metrics() for s in sidecars]
    talked = talk(sidecars, users, turns, beside)
    cold = [ms for _, _, ms, _ in talked.cold]
    near = [ms for size, _, ms, _ in talked.cold if NEAR[0] <= size <= NEAR[1]]
    alone = [ms for size, held, ms, _ in talked.cold if held and NEAR[0] <= size <= NEAR[1]]
    warm = [ms for ms, _ in talked.warm]
    after = [s.metrics() for s in sidecars]
    scopes = "; ".join(f"sidecar {k + 1}: " + (", ".join(
        f"{name} {was.get(name, 0):g} -> {v:g}" for name, v in scope_metrics(now).items())
        or "n/a") for k, (was, now) in enumerate(zip(before, after, strict=True)))
    rss = ", ".join(f"{s.rss_mb():.0f} MB (peak {s.peak_mb:.0f} MB)" for s in sidecars)
    reembed = sum(a.get("memsidecar_reembed_total_rows", 0) for a in after)
    return "\n".join([
        "", f"{len(users)} users (memories in their scopes: median "
        f"{np.median([u.memories for u in users]):.0f}, {min(u.memories for u in users)}-"
        f"{max(u.memories for u in users)}), {turns} Injects each (round robin); RSS after: "
        f"{rss}; re-embed rows: {reembed:.0f}; load average {os.getloadavg()[0]:.1f}", "",
        "| Inject | calls | p50 ms | p99 ms |", "|---|---|---|---|",
        f"| cold (a user's first) | {len(cold)} | {pct(cold, 50)} | {pct(cold, 99)} |",
        f"| cold, scopes of {NEAR[0]}-{NEAR[1]} memories | {len(near)} | {pct(near, 50)} | "
        f"{pct(near, 99)} |",
        f"| cold, scopes of {NEAR[0]}-{NEAR[1]} memories, the agent's own scope held | "
        f"{len(alone)} | {pct(alone, 50)} | {pct(alone, 99)} |",
        f"| warm (later) | {len(warm)} | {pct(warm, 50)} | {pct(warm, 99)} |",
        *(each_sidecar(talked, k) for k in range(len(sidecars)) if len(sidecars) > 1),
        f"| warm, {len(beside)} users beside the cold ones (a second client) | "
        f"{len(talked.beside)} | {pct(talked.beside, 50)} | {pct(talked.beside, 99)} |", "",
        *(f"{kind} calls at the server, mean ms (p99 of the whole call "
          f"{np.percentile([r[0] for r in stages], 99):.1f}): " + mean_stages(stages)
          + "; the slowest 5 %: " + mean_stages(slowest(stages, 5))
          for kind, stages in (("cold", talked.cold_stages), ("warm", talked.warm_stages))
          if stages), "",
        *([f"second client's failed calls: {', '.join(talked.errors)}", ""]
          if talked.errors else []),
        f"scope metrics (before -> after): {scopes}"])


def each_sidecar(talked: Talk, k: int) -> str:
    """Sidecar ``k``'s rows: its cold calls of scopes of 50-150 memories, its warm ones."""
    near = [ms for size, _, ms, at in talked.cold if at == k and NEAR[0] <= size <= NEAR[1]]
    warm = [ms for ms, at in talked.warm if at == k]
    return (f"| sidecar {k + 1}: cold, scopes of {NEAR[0]}-{NEAR[1]} memories | {len(near)} | "
            f"{pct(near, 50)} | {pct(near, 99)} |\n"
            f"| sidecar {k + 1}: warm | {len(warm)} | {pct(warm, 50)} | {pct(warm, 99)} |")


def mean_stages(stages: list[list[float]]) -> str:
    return ", ".join(f"{name} {np.mean([r[i] for r in stages]):.1f}"
                     for i, name in enumerate(("call", *STAGES)))


def slowest(stages: list[list[float]], percent: float) -> list[list[float]]:
    """The calls whose whole call at the server took longest (at least one)."""
    return sorted(stages, key=lambda r: r[0])[-max(1, round(len(stages) * percent / 100)):]


def main() -> None:
    args = parser().parse_args()
    if args.sidecars < 1 or (args.sidecars > 1 and not args.dsn):
        parser().error("--sidecars N > 1 needs --dsn: a SQLite store is served by one sidecar")
    if args.roots and len(args.roots) != args.sidecars:
        parser().error("--roots names one checkout per sidecar")
    fleet, report = run(args)
    print(report)
    name = f"fleet_serve_{fleet.memories}{'_postgres' if args.dsn else ''}"
    name += f"_{args.label}" if args.label else ""
    print(f"results: {write_results(name, report)}")


if __name__ == "__main__":
    main()
