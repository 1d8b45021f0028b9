"""What a channel reset's feed row costs: commits and resets with and without its trigger.

Two databases on one throwaway PostgreSQL 15 cluster (tests/pg/cluster.py), both migrated;
on ``before`` the trigger of migration 11 (a deleted channel state appends a ``changes`` row
and NOTIFYs) is dropped again. ``--turns`` commits spread round-robin over ``--channels``
channels (as bench.turn_commit: LongMemEval texts, random unit vectors, ``--items`` injected
memories a turn), and every ``--reset-every`` turns a ``ChannelStates.reset`` of the next
channel, run on both databases interleaved (each first in turn). Then the follower's side:
``ResetElsewhere`` for one reset, with ``--held`` channels held in memory. Prints p50/p99 in
ms.

Run:  .venv/bin/python -m bench.channel_reset_feed [--turns 3000] [--reset-every 5]
"""

from __future__ import annotations

import argparse
import random
import tempfile
import time

import numpy as np

from bench.turn_commit import Backend, corpus, entry_of, pct
from sidecar.injection.channels import ChannelStates
from sidecar.injection.elsewhere import ResetElsewhere, channel_digest
from sidecar.injection.state import ChannelState
from sidecar.injection.state_repo import StateRepo
from sidecar.injection.trace import TraceRing
from sidecar.store.db import Database


def follower_side(held: int, calls: int) -> list[float]:
    """ms of one ``ResetElsewhere`` call naming one of ``held`` channels in memory."""
    with tempfile.TemporaryDirectory() as data_dir:
        db = Database(f"{data_dir}/memory.db")
        states = ChannelStates(StateRepo(db), lambda ids: {})
        gone = ResetElsewhere(states, TraceRing(lambda: 0))
        names = [f"channel-{i}" for i in range(held)]
        times = []
        for n in range(calls):
            for name in names:  # as ``get`` keeps them, without reading the store
                states._channels.setdefault(name, ChannelState(channel_id=name))
            start = time.perf_counter_ns()
            assert gone([channel_digest(names[n % held])]) == 1
            times.append((time.perf_counter_ns() - start) / 1e6)
        db.close()
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--memories", type=int, default=2000)
    parser.add_argument("--turns", type=int, default=3000)
    parser.add_argument("--channels", type=int, default=50)
    parser.add_argument("--items", type=int, default=5)
    parser.add_argument("--reset-every", type=int, default=5)
    parser.add_argument("--held", type=int, default=1024)
    args = parser.parse_args()
    from sidecar.store.postgres.db import PgDatabase
    from tests.pg.cluster import Cluster

    rng = np.random.default_rng(7)
    memories, vectors, asked = corpus(rng, args.memories)
    cluster = Cluster()
    cluster.start()
    backends: dict[str, Backend] = {}
    try:
        for name in ("before", "after"):
            backends[name] = Backend(PgDatabase(cluster.new_database()), memories, vectors)
        backends["before"].db.execute(
            "DROP TRIGGER injection_channels_change ON injection_channels")
        commits: dict[str, list[float]] = {name: [] for name in backends}
        resets: dict[str, list[float]] = {name: [] for name in backends}
        turns: dict[str, int] = {}
        pick = random.Random(11)
        for n in range(args.turns):
            channel = f"c{n % args.channels}"
            turns[channel] = turns.get(channel, 0) + 1
            chosen = pick.sample(range(args.memories), args.items)
            entry = entry_of(turns[channel], pick.choice(asked),
                             [memories[i] for i in chosen], vectors[chosen], rng)
            reset = f"c{(n // args.reset_every) % args.channels}"
            names = list(backends)
            for name in names[n % 2:] + names[:n % 2]:
                start = time.perf_counter_ns()
                backends[name].commit(channel, entry, False)
                commits[name].append((time.perf_counter_ns() - start) / 1e6)
                if n % args.reset_every == args.reset_every - 1:
                    start = time.perf_counter_ns()
                    backends[name].states.reset(reset)
                    resets[name].append((time.perf_counter_ns() - start) / 1e6)
            if n % args.reset_every == args.reset_every - 1:
                turns[reset] = 0
        feed_rows = {name: int(b.db.execute(
            "SELECT count(*) FROM changes WHERE channel IS NOT NULL")[0][0])
            for name, b in backends.items()}
    finally:
        for backend in backends.values():
            backend.writer.close()
            backend.db.close()
        cluster.remove()
    print(f"{args.turns} commits over {args.channels} channels, {args.items} items each, a "
          f"reset every {args.reset_every} turns; interleaved; p50 / p99 ms")
    print("| database | commit | reset | channel feed rows |\n|---|---|---|---|")
    for name in backends:
        print(f"| {name} | {pct(commits[name])} | {pct(resets[name])} | {feed_rows[name]} |")
    for what, times in (("commit", commits), ("reset", resets)):
        ratio = np.percentile(times["after"], 50) / np.percentile(times["before"], 50)
        print(f"{what} p50 after/before: {ratio:.3f}")
    print(f"ResetElsewhere, one reset, {args.held} channels held: "
          f"{pct(follower_side(args.held, 200))}")


if __name__ == "__main__":
    from bench.results import recorded

    with recorded("channel_reset_feed"):
        main()
