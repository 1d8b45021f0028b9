"""Latency through the Python client against a real sidecar holding 10,000 memories.

Run: make bench-latency   (JSON in bench/results/latency.json)
Each RPC is timed sequentially (one call in flight), as an agent issues them.
"""

from __future__ import annotations

import itertools
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
from memsidecar.v1 import injection_pb2
from memsidecar_client import BLOCK_PREFIX, Client, message

from bench.latency.helpers import load_note, require

ROOT = Path(__file__).resolve().parents[2]
ROUNDS = int(os.environ.get("LATENCY_ROUNDS", "300"))
WARMUP = 5
NATIVE_CALLS = int(os.environ.get("LATENCY_NATIVE_CALLS", "1000"))  # Go and Rust clients
QUERIES = [
    "what did we decide about JWT refresh tokens?", "who wants to deprecate feature flags",
    "latency of the search index after the incident", "Alice and the GraphQL schema review",
    "why was the nightly export job rolled back", "cost of Redis caching for sessions",
    "monitoring for the staging cluster", "timezone handling in the mobile app",
    "the retry policy of the billing pipeline", "TLS certificates before the end of the quarter",
]


def history(turns: int = 20, blocks_every: int = 4) -> list[injection_pb2.Message]:
    """A realistic channel history: user/assistant turns with a block every few turns."""
    out = [message("system", "You are a helpful engineering agent.")]
    for n in range(turns):
        if n % blocks_every == 0:
            out.append(message("user", f"{BLOCK_PREFIX}\n[Relevant to this message]\n"
                                       f"[Fact] {QUERIES[n % len(QUERIES)]} (memory {n})"))
        out += [message("user", f"Question {n}: {QUERIES[n % len(QUERIES)]}?"),
                message("assistant", f"Answer {n}: " + "details " * 30)]
    return out


def timed(benchmark: Any, fn: Any, rounds: int = ROUNDS) -> Any:
    benchmark.extra_info.update(load_note())
    return benchmark.pedantic(fn, rounds=rounds, iterations=1, warmup_rounds=WARMUP)


def test_inject(benchmark: Any, probe: Client, request: pytest.FixtureRequest) -> None:
    require(lambda: probe.inject("warm-up", channel_id="bench-probe"), "Inject")
    client: Client = request.getfixturevalue("client")
    counter = itertools.count()

    def one() -> injection_pb2.InjectResponse:
        n = next(counter)  # a fresh channel each call: the full pipeline, no channel dedup
        return client.inject(QUERIES[n % len(QUERIES)], channel_id=f"bench-{n}",
                             agent_id="agent-a")

    server_us: list[int] = []

    def recorded() -> injection_pb2.InjectResponse:
        reply = one()
        server_us.append(reply.stats.elapsed_us)
        return reply

    reply = timed(benchmark, recorded)
    assert reply.block.startswith(BLOCK_PREFIX)
    timed_us = sorted(server_us[WARMUP:])
    benchmark.extra_info["server_p50_us"] = timed_us[(len(timed_us) - 1) // 2]


def test_search(benchmark: Any, probe: Client, request: pytest.FixtureRequest) -> None:
    require(lambda: probe.search("warm-up"), "Search")
    client: Client = request.getfixturevalue("client")
    counter = itertools.count()
    reply = timed(benchmark, lambda: client.search(
        QUERIES[next(counter) % len(QUERIES)], agent_id="agent-a", limit=10))
    assert len(reply.hits) == 10


def test_prune_history(benchmark: Any, probe: Client, request: pytest.FixtureRequest) -> None:
    messages = history()
    require(lambda: probe.prune_history(messages, max_keep=3), "PruneHistory")
    client: Client = request.getfixturevalue("client")
    reply = timed(benchmark, lambda: client.prune_history(messages, max_keep=3), rounds=1000)
    assert len(reply.removed_indices) == 3  # 5 blocks, keep 2 + the incoming one


def test_render_transcript(benchmark: Any, probe: Client,
                           request: pytest.FixtureRequest) -> None:
    messages = history()
    require(lambda: probe.render_transcript(messages), "RenderTranscript")
    client: Client = request.getfixturevalue("client")
    reply = timed(benchmark, lambda: client.render_transcript(messages), rounds=1000)
    assert reply.blocks_skipped == 5


def native_bench(benchmark: Any, request: pytest.FixtureRequest, tmp_path: Path,
                 make_target: str, command: list[str]) -> None:
    """Build a compiled client, run its N sequential Inject calls (same store, agent and
    queries as test_inject) and record the percentiles it prints in extra_info."""
    target: str = request.getfixturevalue("target")
    built = subprocess.run(["make", "-s", make_target], cwd=ROOT, capture_output=True, text=True)
    assert built.returncode == 0, f"make {make_target} failed:\n{built.stdout}\n{built.stderr}"
    queries = tmp_path / "queries.txt"
    queries.write_text("\n".join(QUERIES) + "\n")
    args = ["--addr", target, "--bench", str(NATIVE_CALLS), "--queries", str(queries),
            "--agent", "agent-a"]
    lines: list[str] = []

    def run() -> None:
        done = subprocess.run([*command, *args], capture_output=True, text=True)
        assert done.returncode == 0, done.stdout + done.stderr
        lines[:] = done.stdout.splitlines()

    benchmark.extra_info.update(load_note())
    benchmark.pedantic(run, rounds=1, iterations=1)
    stats = dict(part.split("=") for part in lines[-1].split()[2:])
    benchmark.extra_info.update({k: int(v) for k, v in stats.items()})
    print(lines[-1])


def test_go_client_sequential_inject(benchmark: Any, probe: Client,
                                     request: pytest.FixtureRequest, tmp_path: Path) -> None:
    """build/go-client -bench N: what a Go agent sees (p50/p99 in extra_info)."""
    require(lambda: probe.inject("warm-up", channel_id="bench-probe"), "Inject")
    native_bench(benchmark, request, tmp_path, "go-client", [str(ROOT / "build" / "go-client")])


def test_rust_client_sequential_inject(benchmark: Any, probe: Client,
                                       request: pytest.FixtureRequest, tmp_path: Path) -> None:
    """build/rust/bench --bench N: what a Rust agent sees (p50/p99 in extra_info)."""
    require(lambda: probe.inject("warm-up", channel_id="bench-probe"), "Inject")
    native_bench(benchmark, request, tmp_path, "rust-client",
                 [str(ROOT / "build" / "rust" / "bench")])
