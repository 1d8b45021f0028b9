"""Warm Injects on a large fleet store against a small one, interleaved call by call.

Two ``memsidecar serve`` processes run at once: one over ``--large`` and one over ``--small``
(two stores made by ``bench.fleet_store``, e.g. 1,000,000 and 10,000 memories, same agents).
``--active`` users of the large store are drawn by the seed; each is paired with the user of
the same agent in the small store whose scope is nearest in size. Both users of a pair are
sent the same texts (the large user's CoQA questions, each with its own ``user_id``), so the
two calls embed the same text and differ in the store they search. A first round loads every
scope (cold, not compared); then ``--turns`` warm rounds, each pair's two calls back to back
in alternating order, so the machine's load falls on both alike. Prints p50/p99 of each
store's warm calls at the client and at the server (elapsed, search stage), the ratio of
the p50s, the paired ratio (median over pairs of large / small) and each server's CPU time
a warm call (user + system of all its threads, from /proc: what other processes' load
changes least). ``--root`` serves another checkout for both.

Run:  .venv/bin/python -m bench.fleet_pair --large DIR --small DIR [--active 60]
      [--turns 4] [--seed 1] [--page-cache fill] [--root DIR]
      [--large-dsn postgresql://... --small-dsn postgresql://...]
``--large-dsn``/``--small-dsn``: the stores are those PostgreSQL databases (made by
``bench.fleet_store --dsn``), each served on its defaults as a SQLite store is; ``--large``
and ``--small`` then hold each sidecar's own files.
Copy the stores first: serving writes into their data dirs. Writes
bench/results/fleet_pair.md.
"""

from __future__ import annotations

import argparse
import os
from collections import defaultdict
from contextlib import ExitStack
from pathlib import Path

import numpy as np

from bench.agent_loop_replay import cpu_flags
from bench.fleet_serve import (
    Sidecar,
    User,
    conversations,
    imported_from,
    inject_once,
    pct,
    set_page_cache,
    sidecar_config,
)
from bench.fleet_store import CACHE, COQA, open_target, pool_for, recorded_fleet
from bench.inject_vs_embedding import cpu_seconds
from bench.results import ROOT, write_results
from sidecar.api.server_config import ServerConfig
from sidecar.embedding.config import EmbeddingConfig


def users_of(data_dir: Path, active: int, seed: int, data: Path = COQA,
             cache: Path = CACHE, dsn: str = "") -> list[User]:
    db = open_target(data_dir, dsn)
    try:
        fleet = recorded_fleet(db)
    finally:
        db.close()
    pool = pool_for(data, EmbeddingConfig().model, cache, fleet.stories)
    return conversations(fleet, pool, min(active, fleet.users), seed)


def pairs(large: list[User], small: list[User]) -> list[tuple[User, User]]:
    """Each large user with the small store's user of its agent nearest in scope size (each
    small user used once while others of the agent are left), asked the large user's
    questions."""
    by_agent: dict[str, list[User]] = defaultdict(list)
    for user in small:
        by_agent[user.agent].append(user)
    out = []
    for user in large:
        mates = by_agent.get(user.agent)
        if not mates:
            continue
        mate = min(mates, key=lambda m: abs(m.memories - user.memories))
        if len(mates) > 1:
            mates.remove(mate)
        out.append((user, User(mate.agent, mate.user, user.questions, mate.memories)))
    return out


def run(args: argparse.Namespace) -> str:
    matched = pairs(
        users_of(args.large, args.active, args.seed, args.data, args.cache, args.large_dsn),
        users_of(args.small, 10**9, args.seed, args.data, args.cache, args.small_dsn))
    warm: dict[str, list[float]] = {"large": [], "small": []}
    stages: dict[str, list[list[float]]] = {"large": [], "small": []}
    paired: list[float] = []
    with ExitStack() as stack:
        sidecars = {}
        for name, folder, dsn in (("large", args.large, args.large_dsn),
                                  ("small", args.small, args.small_dsn)):
            folder.mkdir(parents=True, exist_ok=True)
            config = sidecar_config(None, dsn, folder)
            sidecars[name] = Sidecar(folder, args.root, config, args.rss_limit_mb)
            stack.enter_context(sidecars[name].running())
            set_page_cache(ServerConfig(data_dir=str(folder)).db_path, args.page_cache)
        for big, little in matched:  # every scope loaded: the cold round, not compared
            inject_once(sidecars["large"], big, 0)
            inject_once(sidecars["small"], little, 0)
        cpu_start = {name: cpu_seconds(s.proc.pid) for name, s in sidecars.items()}
        for turn in range(1, args.turns + 1):
            for i, pair in enumerate(matched):
                order = (0, 1) if (i + turn) % 2 else (1, 0)
                ms = [0.0, 0.0]
                for side in order:
                    name = ("large", "small")[side]
                    ms[side] = inject_once(sidecars[name], pair[side], turn, stages[name])
                    warm[name].append(ms[side])
                paired.append(ms[0] / ms[1])
        rss = {name: s.rss_mb() for name, s in sidecars.items()}
        cpu = {name: (cpu_seconds(s.proc.pid) - cpu_start[name]) * 1000 / len(warm[name])
               for name, s in sidecars.items()}
    rows = [f"| {name} | {len(warm[name])} | {pct(warm[name], 50)} | {pct(warm[name], 99)} | "
            f"{pct([r[0] for r in stages[name]], 50)} | "
            f"{pct([r[STAGE_SEARCH] for r in stages[name]], 50)} | {cpu[name]:.2f} | "
            f"{rss[name]:.0f} |"
            for name in ("large", "small")]
    sizes = [(a.memories, b.memories) for a, b in matched]
    return "\n".join([
        f"large: {args.large}; small: {args.small}; served: {args.root} (imports "
        f"{imported_from(args.root)}); {os.cpu_count()} CPUs, flags {cpu_flags()}; "
        f"load average {os.getloadavg()[0]:.1f}",
        f"{len(matched)} pairs (scope sizes, median: large "
        f"{np.median([s[0] for s in sizes]):.0f}, small {np.median([s[1] for s in sizes]):.0f}),"
        f" {args.turns} warm turns each, seed {args.seed}", "",
        "| store | warm calls | p50 ms | p99 ms | server p50 ms | search stage p50 ms | "
        "server CPU ms a call | RSS MB |", "|---|---|---|---|---|---|---|---|", *rows, "",
        f"warm p50, large / small: {np.median(warm['large']) / np.median(warm['small']):.3f}; "
        f"paired (median over calls of large / small): {np.median(paired):.3f}; "
        f"server CPU a call, large / small: {cpu['large'] / cpu['small']:.3f}"])


STAGE_SEARCH = 3  # inject_once's row: elapsed, embed, pinned, search, ...


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--large", type=Path, required=True, help="the large store's data dir")
    p.add_argument("--small", type=Path, required=True, help="the small store's data dir")
    p.add_argument("--active", type=int, default=60, help="pairs of users")
    p.add_argument("--turns", type=int, default=4, help="warm Injects per user")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--page-cache", choices=("as-is", "drop", "fill"), default="fill")
    p.add_argument("--root", type=Path, default=ROOT, help="the checkout served")
    p.add_argument("--rss-limit-mb", type=float, default=8000)
    p.add_argument("--data", type=Path, default=COQA, help="CoQA json the stores were made from")
    p.add_argument("--large-dsn", default="", help="the large store is this PostgreSQL database")
    p.add_argument("--small-dsn", default="", help="the small store is this PostgreSQL database")
    p.add_argument("--cache", type=Path, default=CACHE, help="where the pool's vectors are kept")
    return p


def main() -> None:
    report = run(parser().parse_args())
    print(report)
    print(f"results: {write_results('fleet_pair', report)}")


if __name__ == "__main__":
    main()
