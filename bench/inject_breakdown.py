"""Where an Inject's time goes over gRPC: the quick loop for latency work (about 2 minutes).

Serves a copy of the replay benchmark's cached store (``bench/.cache/replay_store_<size>``,
built by ``bench.replay_longmemeval``) with ``memsidecar serve``, pings it (Health.Check), then
sends the first ``--turns`` replay user turns as Injects, ``--passes`` times (a fresh channel
per pass), timing the bare embedding of each text in this process right after its call. Prints
p50/p99 of: ping, Inject at the client, bare embedding, server elapsed, its embed stage, the
hop (client minus server) and the server's other stages. No imports between turns (the full
replay has them), so it isolates the call itself.

Run:  .venv/bin/python -m bench.inject_breakdown [--size 100000] [--turns 400] [--passes 2]
      [--long-text-tokens N] [--model minilm-int8] [--short]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from grpc_health.v1 import health_pb2, health_pb2_grpc
from memsidecar.v1 import injection_pb2, injection_pb2_grpc

from bench.inject_overhead import user_turns
from bench.lme_data import load_oracle, questions
from bench.replay_longmemeval import cached_store, sidecar, variant, working_copy
from sidecar.embedding.models import FP32, MODEL_NAMES

STAGES = ("search", "dedup", "budget", "format", "persist")


def p(values: list[float] | np.ndarray) -> str:
    return f"{np.percentile(values, 50):.2f}/{np.percentile(values, 99):.2f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--turns", type=int, default=400)
    parser.add_argument("--passes", type=int, default=2)
    parser.add_argument("--long-text-tokens", type=int, default=0,
                        help="[server] onnx_long_text_tokens, here and in the sidecar")
    parser.add_argument("--model", choices=MODEL_NAMES, default=FP32,
                        help="[embedding] model, here and in the sidecar")
    parser.add_argument("--short", action="store_true",
                        help="the LongMemEval questions (short) instead of the user turns")
    args = parser.parse_args()
    store = cached_store(args.size, args.model)
    toml, embedder = variant(args.long_text_tokens, model=args.model)
    turns = ([(q.id, q.text) for q in questions(load_oracle())][: args.turns] if args.short
             else user_turns(args.turns))
    with working_copy(store, toml) as data_dir:
        with sidecar(data_dir) as channel:
            health = health_pb2_grpc.HealthStub(channel)
            ping = []
            for _ in range(300):
                start = time.perf_counter()
                health.Check(health_pb2.HealthCheckRequest())
                ping.append((time.perf_counter() - start) * 1000)
            inject = injection_pb2_grpc.MemoryInjectionStub(channel).Inject
            for n in range(args.passes):
                client, bare, server, embed = [], [], [], []
                stages: dict[str, list[float]] = {s: [] for s in STAGES}
                for qid, text in turns:
                    start = time.perf_counter()
                    reply = inject(injection_pb2.InjectRequest(
                        agent_id=qid, channel_id=f"{qid}-{n}", text=text, source="user"))
                    client.append((time.perf_counter() - start) * 1000)
                    start = time.perf_counter()
                    embedder.embed_query(text)
                    bare.append((time.perf_counter() - start) * 1000)
                    server.append(reply.stats.elapsed_us / 1000)
                    embed.append(reply.stats.stages.embed_us / 1000)
                    for s in STAGES:
                        stages[s].append(getattr(reply.stats.stages, f"{s}_us") / 1000)
                c, sv, e = np.array(client), np.array(server), np.array(embed)
                print(f"pass {n}: ping {p(ping)} | Inject {p(c)} bare {p(bare)} ratio "
                      f"{np.median(c) / np.median(bare):.2f}x | server {p(sv)} embed {p(e)} "
                      f"hop {p(c - sv)} rest {p(sv - e)} | "
                      + " ".join(f"{s} {p(v)}" for s, v in stages.items()), flush=True)


if __name__ == "__main__":
    from bench.results import recorded

    with recorded("inject_breakdown"):
        main()
