"""Replay LongMemEval conversations through Inject over gRPC and report the injection quality
and latency at two store sizes.

For each question of the oracle set (sessions in date order, channel = agent = question id):
one Inject per user turn, then the session's messages are imported as memories, so every
session sees the memories of the earlier ones; after the last session, one Inject with the
question, where the share of its answer-bearing user turns in view (its block and the blocks
still held) is the evidence figure. The store is padded with shared memories
(bench/padding.py) to the requested size. The sidecar runs as a separate process
(``memsidecar serve``), with the default injection config. The bare query embedding is timed
in this process on the same texts, interleaved with the Inject calls so both see the same load.

Run:  .venv/bin/python -m bench.replay_longmemeval            (writes bench/results/)
      [--sizes 100000] [--query-max-tokens 128] [--long-text-tokens 1] [--score-floor 0]
      [--background-floor 0] [--own-channel-boost 0]
      (config variants)
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import grpc
import numpy as np
from grpc_health.v1 import health_pb2, health_pb2_grpc
from memsidecar.v1 import injection_pb2, injection_pb2_grpc, memory_pb2, store_pb2, store_pb2_grpc

from bench.lme import CACHE, oracle
from bench.padding import approximation, padding, real
from bench.results import write_results
from sidecar.api.server_config import ServerConfig
from sidecar.embedding import Embedder
from sidecar.embedding.models import FP32, MODEL_NAMES, identity, model_files
from sidecar.injection.config import MemoryInjectionConfig
from sidecar.retrieval.vector.adaptive import open_vector_index
from sidecar.retrieval.vector.config import VectorConfig
from sidecar.store.db import Database
from sidecar.store.model_repo import MODEL_KEY, ModelRepo
from sidecar.store.repos import Repositories

PAD_TYPES = (6, 8, 7)  # fact, observation, event
STAGES = ("pinned", "search", "dedup", "budget", "format", "persist")


@dataclass
class Replay:
    turns: int = 0
    duplicates: int = 0  # items carried by a block still in view (the K - 1 latest non-empty)
    updates: int = 0
    empty: int = 0
    items: list[int] = field(default_factory=list)
    padding: list[int] = field(default_factory=list)  # items from other conversations
    tokens: list[int] = field(default_factory=list)
    inject_ms: list[float] = field(default_factory=list)
    server_ms: list[float] = field(default_factory=list)
    search_ms: list[float] = field(default_factory=list)
    server_embed_ms: list[float] = field(default_factory=list)
    embed_ms: list[float] = field(default_factory=list)
    stages_ms: dict[str, list[float]] = field(default_factory=dict)
    stored: int = 0
    evidence: list[float] = field(default_factory=list)  # per question: its evidence in view


def padded_store(size: int, texts: list[str], vectors: np.ndarray, model: str = FP32) -> Path:
    """A cached directory holding the padded store and its saved hnsw index.

    The index is built here, once, so the sidecar loads it at start and the replay measures
    the steady state (a fresh data dir would be searched exactly while the index builds in
    the background, with the build competing for the 2 cores).
    """
    done = store_dir(size, model)
    if (done / "ready").exists():
        return done
    shutil.rmtree(done, ignore_errors=True)
    done.mkdir(parents=True)
    pad_texts, pad_vectors = padding(texts, vectors, size)
    build_store(done, pad_texts, pad_vectors, model)
    db = Database(done / "memsidecar.sqlite3")
    index = open_vector_index(done, Repositories.open(db).memories, VectorConfig(),
                              vectors.shape[1], wait=True)
    index.close()  # saves DATA_DIR/vectors.hnsw when the index is in use
    db.close()
    (done / "ready").write_text("ok\n")
    return done


def store_dir(size: int, model: str = FP32) -> Path:
    return CACHE / (f"replay_store_{size}" + ("" if model == FP32 else f"_{model}"))


def cached_store(size: int, model: str = FP32) -> Path:
    """The padded store this benchmark cached for ``size`` (other benchmarks reuse it)."""
    store = store_dir(size, model)
    if not (store / "ready").exists():
        raise SystemExit(f"{store} missing: run bench.replay_longmemeval --sizes {size} "
                         f"--model {model}")
    return store


@contextlib.contextmanager
def working_copy(store: Path, toml: str = "") -> Iterator[Path]:
    """A throw-away data dir copied from a cached store, with ``toml`` as its config file."""
    with tempfile.TemporaryDirectory(dir=CACHE) as tmp:
        for item in store.iterdir():
            if item.name != "ready":
                shutil.copy2(item, Path(tmp) / item.name)
        if toml:
            (Path(tmp) / "memsidecar.toml").write_text(toml)
        yield Path(tmp)


def variant(long_text_tokens: int = 0, query_max_tokens: int = 0,
            model: str = FP32) -> tuple[str, Embedder]:
    """The sidecar's config file for a variant (0 = default) and an embedder whose query
    embedding runs on the same sessions as the sidecar's (for the bare embedding)."""
    server = ServerConfig()
    toml = f'[embedding]\nmodel = "{model}"\n'
    if long_text_tokens:
        server = replace(server, onnx_long_text_tokens=long_text_tokens)
        toml += f"[server]\nonnx_long_text_tokens = {long_text_tokens}\n"
    if query_max_tokens:
        toml += f"[retrieval]\nquery_max_tokens = {query_max_tokens}\n"
    return toml, Embedder(model_files(model), **server.embedder_options())


def build_store(data_dir: Path, texts: list[str], vectors: np.ndarray, model: str) -> None:
    """The padding memories, made by embedding model ``model`` (recorded in the store)."""
    db = Database(data_dir / "memsidecar.sqlite3")
    ModelRepo(db).set(MODEL_KEY, identity(model).to_json())
    now = time.time_ns() // 1000
    rows = [
        (f"pad-{i}", text, PAD_TYPES[i % 3], 0.5, now, now, "bench", vectors[i].tobytes())
        for i, text in enumerate(texts)
    ]
    for start in range(0, len(rows), 5000):
        with db.transaction():
            db.executemany(
                "INSERT INTO memories (id, content, type, importance, created_at, updated_at, "
                "source, embedding) VALUES (?,?,?,?,?,?,?,?)", rows[start:start + 5000])
    db.close()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextlib.contextmanager
def sidecar(data_dir: Path, target: str = "") -> Iterator[grpc.Channel]:
    with sidecar_process(data_dir, target) as (channel, _proc):
        yield channel


@contextlib.contextmanager
def sidecar_process(data_dir: Path, target: str = "",
                    ) -> Iterator[tuple[grpc.Channel, subprocess.Popen[bytes]]]:
    """``memsidecar serve`` over ``data_dir`` on ``target`` (default: a free loopback port),
    once SERVING: a channel to it and its process."""
    target = target or f"127.0.0.1:{free_port()}"
    log = open(data_dir / "sidecar.log", "wb")  # noqa: SIM115
    proc = subprocess.Popen(
        [sys.executable, "-m", "sidecar", "serve", "--listen", target, "--data-dir",
         str(data_dir), "--http-listen", "", "--log-level", "WARNING"],
        stdout=log, stderr=subprocess.STDOUT, env={**os.environ, "OPENBLAS_NUM_THREADS": "1"},
    )
    channel = grpc.insecure_channel(target)
    try:
        health = health_pb2_grpc.HealthStub(channel)
        deadline = time.monotonic() + 600
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"sidecar exited; see {data_dir / 'sidecar.log'}")
            with contextlib.suppress(grpc.RpcError):
                if health.Check(health_pb2.HealthCheckRequest(), timeout=1).status == 1:
                    break
            if time.monotonic() > deadline:
                raise TimeoutError("sidecar never became SERVING")
            time.sleep(0.5)
        yield channel, proc
    finally:
        channel.close()
        proc.terminate()
        proc.wait(timeout=60)
        log.close()


def replay(channel: grpc.Channel, questions: list[dict[str, Any]], embedder: Embedder,
           keep: int, query_max_tokens: int = 0) -> Replay:
    inject = injection_pb2_grpc.MemoryInjectionStub(channel).Inject
    store = store_pb2_grpc.MemoryStoreStub(channel)
    out = Replay()
    for q in questions:
        qid = q["question_id"]
        blocks: list[set[str]] = []  # the question's non-empty blocks, oldest first
        sessions = sorted(zip(q["haystack_dates"], q["haystack_sessions"], strict=True),
                          key=lambda pair: pair[0])
        evidence: set[str] = set()  # ids of the question's has_answer user turns
        for k, (_, session) in enumerate(sessions):
            for message in session:
                if message["role"] != "user" or not message["content"].strip():
                    continue
                _turn(inject, embedder, qid, message["content"], blocks, keep, out,
                      query_max_tokens)
            out.stored += _import(store, qid, f"{qid}/{k}", session, evidence)
        seen = _turn(inject, embedder, qid, q["question"], blocks, keep, out, query_max_tokens)
        if evidence:
            out.evidence.append(len(seen & evidence) / len(evidence))
    return out


def _turn(inject: Any, embedder: Embedder, qid: str, text: str, blocks: list[set[str]],
          keep: int, out: Replay, query_max_tokens: int = 0) -> set[str]:
    """One Inject; returns the ids the model has in view after it (the block and the blocks
    still held)."""
    start = time.perf_counter()
    reply = inject(injection_pb2.InjectRequest(agent_id=qid, channel_id=qid, text=text,
                                               source="user"))
    out.inject_ms.append((time.perf_counter() - start) * 1000)
    start = time.perf_counter()
    embedder.embed_query(text, query_max_tokens)
    out.embed_ms.append((time.perf_counter() - start) * 1000)
    out.turns += 1
    out.items.append(len(reply.items))
    out.padding.append(sum(item.id.startswith("pad-") for item in reply.items))
    out.tokens.append(reply.stats.block_tokens)
    out.server_ms.append(reply.stats.elapsed_us / 1000)
    out.search_ms.append(reply.stats.stages.search_us / 1000)
    out.server_embed_ms.append(reply.stats.stages.embed_us / 1000)
    stages = reply.stats.stages
    for name in STAGES:
        out.stages_ms.setdefault(name, []).append(getattr(stages, f"{name}_us") / 1000)
    out.empty += not reply.items
    in_view = set().union(*blocks[len(blocks) - keep + 1:]) if keep > 1 else set()
    for item in reply.items:
        if item.is_update:
            out.updates += 1
        elif item.id in in_view:
            out.duplicates += 1
    if reply.items:
        blocks.append({item.id for item in reply.items})
    return in_view | {item.id for item in reply.items}


def _import(store: Any, qid: str, prefix: str, session: list[dict[str, Any]],
            evidence: set[str]) -> int:
    """Store the session's messages (ids ``prefix#index``); adds the ids of its
    answer-bearing user turns to ``evidence``."""
    evidence.update(f"{prefix}#{j}" for j, m in enumerate(session)
                    if m["role"] == "user" and m.get("has_answer") and m["content"].strip())
    requests = [
        store_pb2.UpsertMemoryRequest(memory=memory_pb2.Memory(
            id=f"{prefix}#{j}", content=m["content"][:16_000], agent_id=qid, channel_id=qid,
            source="replay", type=memory_pb2.MEMORY_TYPE_FACT if m["role"] == "user"
            else memory_pb2.MEMORY_TYPE_OBSERVATION))
        for j, m in enumerate(session) if m["content"].strip()
    ]
    return int(store.ImportMemories(iter(requests)).stored)


def stage_line(r: Replay) -> str:
    """Server stages other than embed: p50 / p99 in ms."""
    return "server stages p50/p99 ms: " + ", ".join(
        f"{name} {np.percentile(v, 50):.2f}/{np.percentile(v, 99):.2f}"
        for name, v in r.stages_ms.items())


def pct(values: list[float]) -> str:
    p50, p95, p99 = np.percentile(values, [50, 95, 99])
    return f"{p50:.1f} / {p95:.1f} / {p99:.1f}"


def row(size: int, r: Replay) -> str:
    ratio = float(np.median(r.inject_ms) / np.median(r.embed_ms))
    rest = np.array(r.server_ms) - np.array(r.server_embed_ms) - np.array(r.search_ms)
    return (f"| {size:,} | {r.turns} | {r.duplicates} | {np.mean(r.items):.2f} | "
            f"{np.mean(r.padding):.2f} | {np.mean(r.evidence):.3f} | "
            f"{np.mean(r.tokens):.0f} | {pct(r.inject_ms)} | {pct(r.embed_ms)} | "
            f"{ratio:.2f}x | {pct(r.server_ms)} | {np.median(r.server_embed_ms):.1f} / "
            f"{np.median(r.search_ms):.1f} / {np.median(rest):.1f} |")


HEADER = (
    "| padding memories | turns | duplicates in view | memories/turn | "
    "from other conversations/turn | evidence in view at the question | tokens/turn | "
    "Inject p50 / p95 / p99 ms (gRPC) | bare embed p50 / p95 / p99 ms | p50 ratio | "
    "server elapsed p50 / p95 / p99 ms | server p50 ms: embed / search / rest |\n"
    "|---|---|---|---|---|---|---|---|---|---|---|---|"
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--questions", type=int, default=100)
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--query-max-tokens", type=int, default=0,
                        help="[retrieval] query_max_tokens for the sidecar and the bare "
                             "embedding (0: the default, 256)")
    parser.add_argument("--score-floor", type=float, default=-1.0,
                        help="[memory_injection] score_floor for the sidecar (default: the "
                             "config default; 0 = off, the floor before it existed)")
    parser.add_argument("--background-floor", type=float, default=-1.0,
                        help="[memory_injection] background_floor for the sidecar (default: "
                             "the config default; 0 = off)")
    parser.add_argument("--own-channel-boost", type=float, default=-1.0,
                        help="[memory_injection] own_channel_boost for the sidecar (default: "
                             "the config default; 0 = off)")
    parser.add_argument("--long-text-tokens", type=int, default=0,
                        help="[server] onnx_long_text_tokens for the sidecar and the bare "
                             "embedding (0: the default, 96)")
    parser.add_argument("--model", choices=MODEL_NAMES, default=FP32,
                        help="[embedding] model of the sidecar, the padding and the bare "
                             "embedding")
    args = parser.parse_args()
    toml, embedder = variant(args.long_text_tokens, args.query_max_tokens, args.model)
    floors = {"score_floor": args.score_floor, "background_floor": args.background_floor,
              "own_channel_boost": args.own_channel_boost}
    if any(v >= 0 for v in floors.values()):
        toml += "[defaults.memory_injection]\n" + "".join(
            f"{k} = {v}\n" for k, v in floors.items() if v >= 0)
    data = oracle()
    chosen = [q for q in data[:250] if len(q["haystack_sessions"]) >= 2][: args.questions]
    texts, vectors = real(data[250:], embedder)
    keep = MemoryInjectionConfig().max_injected_blocks_in_history
    lines = [HEADER]
    for size in (int(s) for s in args.sizes.split(",")):
        with working_copy(padded_store(size, texts, vectors, args.model), toml) as data_dir, \
                sidecar(data_dir) as channel:
            result = replay(channel, chosen, embedder, keep, args.query_max_tokens)
        lines.append(row(size, result))
        print(lines[-1], f"(updates {result.updates}, empty turns {result.empty}, "
              f"replay memories stored {result.stored}); {stage_line(result)}", flush=True)
    load = os.getloadavg()
    notes = (f"\n{len(chosen)} questions, {sum(len(q['haystack_sessions']) for q in chosen)} "
             f"sessions; load average at the end {load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f} "
             f"on {os.cpu_count()} cores; synthetic padding vs real embedding cosine "
             f"{approximation(texts, vectors, embedder):.3f}")
    if toml:
        notes += "; config: " + " ".join(toml.split())
    suffix = ("" if args.model == FP32 else f"_{args.model}") + (
        f"_q{args.query_max_tokens}" if args.query_max_tokens else "") + (
        f"_lt{args.long_text_tokens}" if args.long_text_tokens else "") + (
        f"_sf{args.score_floor}" if args.score_floor >= 0 else "") + (
        f"_bf{args.background_floor}" if args.background_floor >= 0 else "") + (
        f"_ocb{args.own_channel_boost}" if args.own_channel_boost >= 0 else "")
    write_results(f"replay_longmemeval{suffix}", "\n".join(lines) + "\n" + notes)
    print("\n".join(lines) + "\n" + notes)


if __name__ == "__main__":
    main()
