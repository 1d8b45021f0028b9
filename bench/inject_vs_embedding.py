"""Inject over gRPC against the bare embedding of its text, with every feature on.

The store: the first ``--memories`` LongMemEval user turns (every distinct session's turns in
a stable order, channel = session), embedded once with the served model (cached under
bench/.cache/) and written straight into a fresh data dir: seconds to build. It is served by
a ``memsidecar serve`` process with ``capture = "user"``; the durable turn, the query context
and its focus are on by default. Conversations: other sessions (not stored) with at least
``--turns`` user/assistant exchanges, each user text cut to exactly 16 or 64 model tokens,
driven through the README's loop (PruneHistory keeping 3 blocks -> Inject -> block, text,
the session's next assistant reply), so follow-ups carry their context and the focus votes.
Beside the times: the server process's CPU time (user + system, all its threads) a turn
(its PruneHistory and Inject, and what they leave to background threads), which load on
other cores changes little: what the calls cost, where the times say what they wait.

Each Inject is timed at the client (the generated stub, no client library around it) next to
the bare single-query embedding of the same text in this process (same model, same session
options as the sidecar's), which of the two goes first alternating turn by turn so both see
the same load. Prints, per length and for all turns and the follow-ups: p50/p99 of Inject,
of the bare embedding, their ratios, and the server's own figures (elapsed, its stages: embed,
search beyond the embedding, pinned, dedup, budget, format, persist; the rest = elapsed minus
the embedding; the hop = client minus server) and of the PruneHistory before each Inject.
The floor: after each Inject, another bare embedding and then an Inject the sidecar skips at
once (``source = "system"``), timed at the client: a real call through the interceptors,
validation and reply with no work in it, and the ratio an Inject would have if everything but
its embedding cost nothing (bare embedding + floor, over the bare embedding, at p50).
Writes bench/results/inject_vs_embedding.json.

With ``--baseline TREE`` (a source tree, e.g. ``git archive`` of an earlier commit unpacked)
a second sidecar imports ``sidecar`` and ``kernels`` from it and serves a copy of the store;
every turn goes to both, in alternating order (and the bare embedding before or after each
Inject, alternating apart from it): a before/after in one run.

Run:  .venv/bin/python -m bench.inject_vs_embedding [--memories 2000] [--conversations 60]
      [--turns 5] [--max-total 10] [--baseline /tmp/before]
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time
from collections.abc import Callable, Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from memsidecar.v1 import injection_pb2
from memsidecar_client import Client

from bench import lme_data
from bench.agent_loop_replay import AgentLoop, config_text, cpu_flags, python_path, served
from bench.lme_data import Turn, cached_embeddings, load_oracle, pooled_turns
from bench.query_context_cost import cut_to
from bench.replay_longmemeval import variant
from bench.results import write_results
from bench.store_build import build_store
from sidecar.embedding import Embedder
from sidecar.embedding.config import EmbeddingConfig
from sidecar.embedding.model_files import TOKENIZER
from sidecar.embedding.onnx import load_tokenizer
from sidecar.store.lock import LOCK_FILENAME

LENGTHS = (16, 64)
STAGES = ("embed", "search", "pinned", "dedup", "budget", "format", "persist")
AGENT = "bench-agent"
# What the sidecar runs with beside its defaults (durable turn, query context and focus on).
SETTINGS = {"embedding": {}, "defaults": {"memory_injection": {"capture": "user"}}}

Talk = list[tuple[str, str]]  # (user text, assistant reply) per turn


@dataclass
class Timed:
    """One Inject: at the client, its bare embedding, and the server's figures (ms)."""

    inject: float
    bare: float
    elapsed: float
    stages: dict[str, float] = field(default_factory=dict)
    prune: float = 0.0  # the PruneHistory before it, at the client
    floor: float = 0.0  # a call skipped at once, right after another bare embedding


def sessions(data: list[dict], stored: set[str]) -> dict[str, Talk]:  # type: ignore[type-arg]
    """The (user text, next assistant reply) pairs of each session not in the store, in
    order: new conversations over what the store holds."""
    out: dict[str, Talk] = {}
    for item in data:
        for sid, session in zip(item["haystack_session_ids"], item["haystack_sessions"],
                                strict=True):
            if sid not in stored:
                out.setdefault(sid, [(a["content"], b["content"][:2000])
                                     for a, b in zip(session, session[1:], strict=False)
                                     if a["role"] == "user" and b["role"] == "assistant"])
    return {sid: out[sid] for sid in sorted(out)}


def conversations(talks: dict[str, Talk], tokens: int, turns: int, limit: int) -> list[Talk]:
    """Up to ``limit`` conversations of ``turns`` turns (in the order of ``talks``), user texts
    cut to ``tokens`` tokens (sessions with fewer turns, or a text shorter than that, are
    skipped)."""
    tokenizer = load_tokenizer(str(TOKENIZER), 512)
    out = []
    for sid in talks:
        cut = [(cut_to(tokenizer, q, tokens), r) for q, r in talks[sid][:turns]]
        if len(cut) == turns and all(q for q, _ in cut):
            out.append(cut)
            if len(out) == limit:
                break
    return out


def store(turns: Sequence[Turn], model: str, data_dir: Path) -> None:
    texts = [t.content for t in turns]
    vectors = cached_embeddings(texts, "lme_turns_user", model)
    build_store(data_dir, [t.id for t in turns], texts, vectors, model=model,
                channels=[t.session_id for t in turns])


def timed_inject(client: Client, embedder: Embedder, out: list[Timed], channel: str,
                 bare_first: bool) -> Callable[[str], tuple[str, list[str]]]:
    """The loop's ``inject``: the Inject of ``text`` and its bare embedding, timed."""
    def inject(text: str) -> tuple[str, list[str]]:
        request = injection_pb2.InjectRequest(agent_id=AGENT, channel_id=channel, text=text,
                                              source="user")
        if bare_first:
            bare = _bare(embedder, text)
        start = time.perf_counter()
        reply = client.injection.Inject(request, timeout=10)
        spent = (time.perf_counter() - start) * 1000
        if not bare_first:
            bare = _bare(embedder, text)
        stats = reply.stats
        out.append(Timed(spent, bare, stats.elapsed_us / 1000,
                         {s: getattr(stats.stages, f"{s}_us") / 1000 for s in STAGES},
                         floor=_floor(client, embedder, text, channel)))
        return reply.block, [item.id for item in reply.items]
    return inject


def _floor(client: Client, embedder: Embedder, text: str, channel: str) -> float:
    """The round trip of an Inject the sidecar skips at once (``source = "system"``: no
    state, no search) after a bare embedding, as a turn's Inject comes after the client's
    work: the interceptors, validation and reply of a real call, with no work in it."""
    embedder.embed_query(text)
    request = injection_pb2.InjectRequest(agent_id=AGENT, channel_id=channel, text="",
                                          source="system")
    start = time.perf_counter()
    client.injection.Inject(request, timeout=10)
    return (time.perf_counter() - start) * 1000


def _bare(embedder: Embedder, text: str) -> float:
    start = time.perf_counter()
    embedder.embed_query(text)
    return (time.perf_counter() - start) * 1000


def summary(rows: list[Timed]) -> dict[str, object]:
    inject = np.array([r.inject for r in rows])
    bare = np.array([r.bare for r in rows])
    elapsed = np.array([r.elapsed for r in rows])
    embed = np.array([r.stages["embed"] for r in rows])

    def pct(values: np.ndarray) -> list[float]:
        return [round(float(v), 3) for v in np.percentile(values, [50, 99])]

    return {
        "n": len(rows), "inject_ms": pct(inject), "bare_ms": pct(bare),
        "ratio_p50": round(float(np.median(inject) / np.median(bare)), 3),
        "ratio_p99": round(float(np.percentile(inject, 99) / np.percentile(bare, 99)), 3),
        "server_ms": pct(elapsed), "rest_ms": pct(elapsed - embed),
        "hop_ms": pct(inject - elapsed),
        "prune_ms": pct(np.array([r.prune for r in rows])),
        "floor_ms": pct(np.array([r.floor for r in rows])),
        # the least ratio any Inject could reach here: its embedding plus a call doing nothing
        "floor_ratio_p50": round(float(
            (np.median(bare) + np.median([r.floor for r in rows])) / np.median(bare)), 3),
        "stages_ms": {s: pct(np.array([r.stages[s] for r in rows])) for s in STAGES},
    }


def line(name: str, s: dict[str, object]) -> str:
    def f(values: object) -> str:
        assert isinstance(values, list)
        return f"{values[0]:.2f}/{values[1]:.2f}"
    stages = s["stages_ms"]
    assert isinstance(stages, dict)
    return (f"{name}: n {s['n']} | Inject {f(s['inject_ms'])} bare {f(s['bare_ms'])} "
            f"ratio p50 {s['ratio_p50']:.2f}x p99 {s['ratio_p99']:.2f}x | server "
            f"{f(s['server_ms'])} rest {f(s['rest_ms'])} hop {f(s['hop_ms'])} | "
            f"PruneHistory {f(s['prune_ms'])} | floor {f(s['floor_ms'])} "
            f"(ratio p50 {s['floor_ratio_p50']:.2f}x) | "
            + " ".join(f"{k} {f(v)}" for k, v in stages.items()))


def run(stored: Sequence[Turn], talks: dict[str, Talk], lengths: Sequence[int],
        conversation_count: int, turns: int, baseline: Path | None = None,
        max_total: int = 10) -> dict[str, object]:
    """Serve ``stored`` (channel = session) and time ``conversation_count`` of ``talks``
    per length (see the module's docstring). ``baseline``: a source tree whose sidecar
    serves a copy of the store too, each turn sent to both (in alternating order)."""
    model = EmbeddingConfig().model
    toml = config_text(None, max_total, {**SETTINGS, "embedding": {"model": model}})
    _, embedder = variant(model=model)
    timed: dict[str, list[Timed]] = {}
    lme_data.CACHE.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=lme_data.CACHE) as tmp, ExitStack() as stack:
        data_dir = Path(tmp) / "store"
        start = time.perf_counter()
        store(stored, model, data_dir)
        built_s = time.perf_counter() - start
        (data_dir / "memsidecar.toml").write_text(toml, encoding="utf-8")
        clients = {"": stack.enter_context(served(data_dir, timeout_s=10))}
        if baseline is not None:
            shutil.copytree(data_dir, Path(tmp) / "baseline", ignore=_logs)
            with python_path(baseline):
                clients = {"baseline, ": stack.enter_context(
                    served(Path(tmp) / "baseline", timeout_s=10)), "this tree, ": clients[""]}
        dirs = {"": data_dir, "baseline, ": Path(tmp) / "baseline", "this tree, ": data_dir}
        pids = {name: server_pid(dirs[name]) for name in clients}
        cpu_start = {name: cpu_seconds(pid) for name, pid in pids.items()}
        for tokens in lengths:
            for n, talk in enumerate(conversations(talks, tokens, turns, conversation_count)):
                channel = f"c{tokens}-{n}"
                loops = {name: AgentLoop(c, channel, AGENT) for name, c in clients.items()}
                for t, (text, reply) in enumerate(talk):
                    # which sidecar goes first and whether the bare embedding goes before or
                    # after each Inject vary apart: tied together, the baseline's PruneHistory
                    # always came right after an Inject (a capture still being written), this
                    # tree's after a bare embedding
                    names = list(clients) if (n + t) % 2 else list(reversed(clients))
                    bare_first = (n + t) // 2 % 2 == 0
                    for name in names:
                        rows = timed.setdefault(f"{name}{tokens} tokens, all turns", [])
                        seen = loops[name].turn(text, reply, timed_inject(
                            clients[name], embedder, rows, channel, bare_first))
                        rows[-1].prune = seen.prune_ms
                        if t > 0:
                            timed.setdefault(f"{name}{tokens} tokens, follow-ups",
                                             []).append(rows[-1])
        turns_sent = {name: sum(len(rows) for key, rows in timed.items()
                                if key.startswith(name) and key.endswith("all turns"))
                      for name in clients}
        cpu_ms = {name.rstrip(", ") or "this tree": round(
            (cpu_seconds(pids[name]) - cpu_start[name]) * 1000 / max(turns_sent[name], 1), 2)
            for name in clients}
    return {"memories": len(stored), "store_build_s": round(built_s, 2), "model": model,
            "max_total": max_total,
            "config": toml, "cpu_flags": cpu_flags(), "baseline": str(baseline or ""),
            "server_cpu_ms_a_turn": cpu_ms,
            "rows": {name: summary(rows) for name, rows in sorted(timed.items())}}


def server_pid(data_dir: Path) -> int:
    """The pid of the sidecar serving ``data_dir`` (its lock file holds it)."""
    return int((data_dir / LOCK_FILENAME).read_text().split()[0])


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of process ``pid`` so far (every thread)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _logs(_: str, names: list[str]) -> list[str]:
    return [n for n in names if n == "sidecar.log"]


def main(argv: Sequence[str] | None = None) -> dict[str, object]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--memories", type=int, default=2000)
    parser.add_argument("--conversations", type=int, default=60,
                        help="conversations per text length")
    parser.add_argument("--turns", type=int, default=5, help="turns per conversation")
    parser.add_argument("--baseline", type=Path, default=None,
                        help="a source tree (e.g. `git archive` of an earlier commit) whose "
                             "sidecar is timed beside this tree's, turn by turn")
    parser.add_argument("--max-total", type=int, default=10,
                        help="[defaults.memory_injection] max_total (the shipped default: 25)")
    args = parser.parse_args(argv)
    data = load_oracle()
    stored = pooled_turns(data, ("user",))[:args.memories]
    talks = sessions(data, {t.session_id for t in stored})
    result = run(stored, talks, LENGTHS, args.conversations, args.turns, args.baseline,
                 args.max_total)
    rows = result["rows"]
    assert isinstance(rows, dict)
    for name, s in rows.items():
        print(line(name, s))
    print("server CPU a turn (PruneHistory + Inject), ms: " + ", ".join(
        f"{k} {v}" for k, v in result["server_cpu_ms_a_turn"].items()))  # type: ignore[attr-defined]
    print(f"{result['memories']} memories (store built in {result['store_build_s']} s), "
          f"CPU {result['cpu_flags']}, load average {os.getloadavg()[0]:.1f}")
    print(f"results: {write_results('inject_vs_embedding', result)}")
    return result


if __name__ == "__main__":
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    main()
