"""A turn's durable commit alone (``ChannelStates.commit``), on SQLite and on PostgreSQL.

No model and no search: ``--memories`` rows with LongMemEval texts and random unit vectors,
then ``--turns`` commits spread round-robin over ``--channels`` channels, each the rows an
Inject of ``--items`` injected memories writes (the reply with its block, the ids, the buffer
rows, the query context with its votes, the access records; with ``--capture`` a pending
capture row), keep 3 blocks as the default config does (so from the fourth turn on each
commit also drops the oldest block's rows). The backends run interleaved turn by turn: a
SQLite data dir and, with ``--pg``, a database on a throwaway local PostgreSQL 15 cluster
(tests/pg/cluster.py: fsync off, synchronous_commit on). Prints p50/p99 of a commit in ms and
PostgreSQL's round trips per commit on the calling thread.

Each commit checks, first in its transaction or batch, that the memories it names are still
there (on PostgreSQL after holding their scopes' erasure locks shared, decision 0047);
``--ab-unguarded`` adds a PostgreSQL database whose commits do not.

Run:  .venv/bin/python -m bench.turn_commit [--turns 2000] [--pg [--ab-unprepared]
      [--ab-unguarded]] [--capture]
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import random
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

import numpy as np

from bench.lme_data import load_oracle, pooled_turns
from bench.pg_trips import round_trips
from sidecar.capture.modes import USER_ROLE, capture_id, user_key
from sidecar.capture.repo import CaptureRepo, Pending
from sidecar.conversation.query_context import RecentTurn
from sidecar.injection.channels import ChannelStates
from sidecar.injection.state import Committed
from sidecar.injection.state_repo import ChosenErased, StateRepo
from sidecar.injection.types import InjectedItem, Injection, InjectStats, Section
from sidecar.records import Memory, MemoryType
from sidecar.store.contract import SqlStore
from sidecar.store.db import Database
from sidecar.store.memories import MemoryRepo
from sidecar.store.versions import VersionRepo
from sidecar.store.write_behind import WriteBehind

DIM = 384
KEEP, DEPTH = 3, 10  # max_injected_blocks_in_history, context_window_depth (defaults)


class Backend:
    """One store, its memories and its channels."""

    def __init__(self, db: SqlStore, memories: list[Memory], vectors: np.ndarray,
                 guarded: bool = True) -> None:
        self.db = db
        self.guarded = guarded  # the check that the chosen memories are still there
        self.memories = MemoryRepo(db, VersionRepo(db))
        self.memories.insert_many(memories, vectors)
        # As the app builds them: a PostgreSQL store is shared (each commit a compare-and-swap
        # on the turn; the access records through the writer thread, after the reply).
        self.writer = WriteBehind(db, name="bench-writer")
        self.states = ChannelStates(StateRepo(db), self.memories.get_many, self.writer,
                                    shared=db.dialect == "postgres")
        self.captures = CaptureRepo(db)

    def commit(self, channel: str, entry: Committed, capture: bool,
               chosen: list[Memory]) -> None:
        state = self.states.get(channel)
        ids = entry.ids
        durable: Callable[[], None] | None = None
        if capture and entry.asked is not None:
            key = user_key(entry.turn, entry.at_us)
            row = Pending(channel, key, "bench", USER_ROLE, entry.turn, entry.asked.text, "",
                          entry.at_us, capture_id("bench", channel, key), entry.asked.embedding)

            def durable() -> None:
                with self.db.transaction():  # a savepoint, as Capture's own write
                    self.captures.put(row)

        with state.lock:
            self.states.commit(state, entry, KEEP, DEPTH,
                               also=lambda: self.memories.touch(ids, entry.at_us),
                               durable=durable, guard=partial(
                                   self.memories.still_there, chosen, ChosenErased(channel))
                               if self.guarded and chosen else None)


def unit(rng: np.random.Generator, n: int) -> np.ndarray:
    vectors = rng.standard_normal((n, DIM)).astype(np.float32)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def corpus(rng: np.random.Generator, n: int) -> tuple[list[Memory], np.ndarray, list[str]]:
    """``n`` memories of LongMemEval texts with random unit vectors, and the short texts a
    turn asks."""
    texts = [t.content[:1200] for t in pooled_turns(load_oracle(), ("user", "assistant"))]
    now = time.time_ns() // 1000
    memories = [Memory(id=f"m{i}", content=texts[i % len(texts)], type=MemoryType.FACT,
                       importance=0.5, created_at=now, updated_at=now, last_accessed_at=0,
                       access_count=0, source="", channel_id="", forgotten=False, version=1,
                       agent_id="bench")
                for i in range(n)]
    return memories, unit(rng, n), [t for t in texts if len(t) < 400]


def entry_of(turn: int, text: str, chosen: list[Memory], vectors: np.ndarray,
             rng: np.random.Generator) -> Committed:
    """What an Inject of ``text`` that chose ``chosen`` commits."""
    items = [InjectedItem(memory=m, section=Section.CONTEXTUAL, content=m.content[:300],
                          score=float(rng.random()), cosine=float(rng.random()), is_update=False)
             for m in chosen]
    block = "[Context from memory]\n" + "\n".join(f"- {i.content}" for i in items)
    now = time.time_ns() // 1000
    asked = RecentTurn(turn, text[:2000], unit(rng, 1)[0],
                       votes=tuple((m.id, float(rng.random())) for m in chosen))
    return Committed(turn=turn, ids=[m.id for m in chosen], versions=[m.version for m in chosen],
                     embeddings=vectors, digest=hashlib.sha256(block.encode()).hexdigest()[:32],
                     reply=Injection(block, items, InjectStats(), "", turn), at_us=now,
                     asked=asked, speaker="" if turn == 1 else None)


def pct(values: list[float]) -> str:
    return f"{np.percentile(values, 50):.3f} / {np.percentile(values, 99):.3f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--memories", type=int, default=2000)
    parser.add_argument("--turns", type=int, default=2000)
    parser.add_argument("--channels", type=int, default=50)
    parser.add_argument("--items", type=int, default=5)
    parser.add_argument("--pg", action="store_true", help="PostgreSQL beside SQLite")
    parser.add_argument("--capture", action="store_true", help="a pending capture row too")
    parser.add_argument("--ab-unprepared", action="store_true",
                        help="with --pg, a second database whose batches are sent as plain "
                             "statements (none prepared), interleaved with the others")
    parser.add_argument("--ab-unguarded", action="store_true",
                        help="with --pg, a second database whose commits do not check that "
                             "their memories are still there (no erasure locks: the commit "
                             "before decision 0047), interleaved with the others")
    args = parser.parse_args()
    rng = np.random.default_rng(7)
    memories, vectors, asked = corpus(rng, args.memories)
    cluster = None
    with tempfile.TemporaryDirectory() as data_dir, contextlib.ExitStack() as stack:
        backends = {"sqlite": Backend(Database(Path(data_dir) / "memory.db"), memories,
                                      vectors)}
        try:
            if args.pg:
                from sidecar.store.postgres.db import PgDatabase
                from tests.pg.cluster import Cluster

                cluster = Cluster()
                cluster.start()
                backends["postgres"] = Backend(PgDatabase(cluster.new_database()), memories,
                                               vectors)
                if args.ab_unprepared:
                    from sidecar.store.postgres.prepared import PreparedStatements

                    unprepared = PgDatabase(cluster.new_database())
                    unprepared.prepared = PreparedStatements(0)
                    backends["postgres_unprepared"] = Backend(unprepared, memories, vectors)
                if args.ab_unguarded:
                    backends["postgres_unguarded"] = Backend(
                        PgDatabase(cluster.new_database()), memories, vectors, guarded=False)
            trips = stack.enter_context(round_trips()) if args.pg else None
            times: dict[str, list[float]] = {name: [] for name in backends}
            rounds: list[int] = []
            pick = random.Random(11)
            for n in range(args.turns):
                channel, turn = f"c{n % args.channels}", n // args.channels + 1
                chosen = pick.sample(range(args.memories), args.items)
                entry = entry_of(turn, pick.choice(asked), [memories[i] for i in chosen],
                                 vectors[chosen], rng)
                names = list(backends)
                order = names[n % len(names):] + names[:n % len(names)]  # each first in turn
                for name in order:
                    before = trips() if trips is not None and name == "postgres" else 0
                    start = time.perf_counter_ns()
                    backends[name].commit(channel, entry, args.capture,
                                          [memories[i] for i in chosen])
                    times[name].append((time.perf_counter_ns() - start) / 1e6)
                    if trips is not None and name == "postgres":
                        rounds.append(trips() - before)
            print(f"{args.memories} memories, {args.turns} commits over {args.channels} "
                  f"channels, {args.items} items each{', capture on' if args.capture else ''}; "
                  "interleaved; p50 / p99 ms")
            print("| store | commit |\n|---|---|")
            for name, values in times.items():
                print(f"| {name} | {pct(values)} |")
            if rounds:
                print(f"PostgreSQL round trips per commit: median {np.median(rounds):g}, "
                      f"max {max(rounds)}")
        finally:
            for backend in backends.values():
                backend.writer.close()
                backend.db.close()
            if cluster is not None:
                cluster.remove()


if __name__ == "__main__":
    from bench.results import recorded

    with recorded("turn_commit"):
        main()
