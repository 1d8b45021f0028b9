"""What naming the end user costs an Inject: the same turns with and without ``user_id``,
interleaved call by call on one server (so both see the same load).

The store (one real server in-process, gRPC on a free port): ``--general`` synthetic
memories of the agent (bench/corpus.py) and ``--per-user`` memories for each of ``--users``
end users of it. Each turn is a new synthetic text sent as the first turn of a new channel
twice: once without ``user_id``, once as one of the users (round robin). Prints client-side
Inject p50 / p99 of both and their ratio, with the CPU flags.

Run:  .venv/bin/python -m bench.user_overhead [--general 10000] [--users 200]
        [--per-user 10] [--turns 400]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from memsidecar.v1 import injection_pb2 as inj
from memsidecar.v1 import memory_pb2 as m
from memsidecar.v1 import store_pb2 as s

from bench.agent_loop_replay import cpu_flags
from bench.capture_replay import AGENT, Variant, pct, serve
from bench.corpus import corpus
from sidecar.embedding import Embedder, bundled_model_files


def fill(v: Variant, general: int, users: int, per_user: int) -> None:
    texts = corpus(general + users * per_user, seed=11)

    def items() -> Iterator[s.UpsertMemoryRequest]:
        for n, text in enumerate(texts):
            user = "" if n < general else f"user-{(n - general) % users}"
            yield s.UpsertMemoryRequest(memory=m.Memory(
                content=text, type=m.MEMORY_TYPE_FACT, agent_id=AGENT, user_id=user))
    v.store.ImportMemories(items())


def timed(v: Variant, text: str, channel: str, user: str) -> float:
    start = time.perf_counter()
    v.injection.Inject(inj.InjectRequest(agent_id=AGENT, channel_id=channel, text=text,
                                         user_id=user))
    return (time.perf_counter() - start) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--general", type=int, default=10_000)
    parser.add_argument("--users", type=int, default=200)
    parser.add_argument("--per-user", type=int, default=10)
    parser.add_argument("--turns", type=int, default=400)
    args = parser.parse_args()
    embedder = Embedder(bundled_model_files())
    turns = corpus(args.turns, seed=97)
    with tempfile.TemporaryDirectory() as tmp:
        v = serve(Path(tmp), "users", embedder)
        try:
            fill(v, args.general, args.users, args.per_user)
            for n, text in enumerate(turns[:20]):  # warm-up
                timed(v, text, f"warm-{n}", "")
            without, with_user = [], []
            for n, text in enumerate(turns):
                user = f"user-{n % args.users}"
                pair = [(without, f"a-{n}", ""), (with_user, f"b-{n}", user)]
                for out, channel, who in pair if n % 2 else pair[::-1]:
                    out.append(timed(v, text, channel, who))
        finally:
            v.close()
    print(f"{args.general} general memories + {args.users} users x {args.per_user} of their "
          f"own; {args.turns} turns each way, interleaved\n")
    print("| Inject | p50 ms | p99 ms |\n|---|---|---|")
    for name, values in (("without user_id", without), ("with user_id", with_user)):
        print(f"| {name} | {pct(values, 50):.2f} | {pct(values, 99):.2f} |")
    print(f"\np50 with / without: {pct(with_user, 50) / pct(without, 50):.3f}")
    print(f"CPU flags: {cpu_flags()}")


if __name__ == "__main__":
    from bench.results import recorded

    with recorded("user_overhead"):
        main()
