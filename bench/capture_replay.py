"""Capture on LongMemEval (oracle): memories the sidecar wrote from the turns it saw, against
the same turns written explicitly with ImportMemories, in one run.

Each variant is a real server (in-process, gRPC on a free port, its own data dir, one shared
embedder). The capture servers replay every session of the chosen questions as the agent loop
does, each session a channel, all servers turn by turn in rotating order (so their Inject
latencies are interleaved): ``PruneHistory(history)``, ``Inject(user turn)``, then the block,
the user turn and the recorded assistant reply are appended to the history. The client writes
no memory. The explicit server gets the same turns with ``ImportMemories`` (one agent per role
set, the session as channel, type OBSERVATION like a capture, through the same gates). Then
every question is asked as that agent: ``Search`` (limit 10) and ``Inject`` on a new channel,
and the evidence turns' recall is scored at turn and session level.

Variants: ``off`` (capture off: the latency baseline), ``user`` and ``all``, each with the
captured turn's vector from the turn alone (``turn``, the default: the user turn's query
embedding reused) or from the turn followed by the message before it (``pair``). After its
last turn each session's history goes to ``PruneHistory`` once more (as the agent's next turn
would send it), so ``all`` sees the last reply too. The servers share one process: their
Inject latencies include the others' background work, and the capture servers' stores grow
with the captures while the ``off`` store stays empty; ``bench.durable_turn --capture`` has
capture's own cost on the reply path.

Reported: recall per variant; memories captured per turn (after the gates) and the outcomes;
Inject p50/p99 per variant; store growth per 1,000 turns (database file, after a checkpoint);
injections of a captured turn into its own channel while it was in the history (must be 0).

Run:  .venv/bin/python -m bench.capture_replay [--questions 500] [--index turn,pair]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import grpc
import numpy as np
from memsidecar.v1 import injection_pb2 as inj
from memsidecar.v1 import injection_pb2_grpc, store_pb2_grpc
from memsidecar.v1 import memory_pb2 as m
from memsidecar.v1 import store_pb2 as s

from bench.lme_data import Question, load_oracle, questions
from bench.lme_metrics import Scores, mean, session_level, turn_level
from sidecar.api.server import Server, create_server
from sidecar.api.server_config import ServerConfig
from sidecar.app import App
from sidecar.capture.modes import assistant_key
from sidecar.config import CONFIG_FILENAME, Config, ConfigStore
from sidecar.embedding import Embedder, bundled_model_files
from sidecar.injection.config import MemoryInjectionConfig
from sidecar.metrics.config import HttpConfig

AGENT = "bench"
ROLES = {"user": ("user",), "all": ("user", "assistant")}


@dataclass(frozen=True, slots=True)
class Turn:
    id: str  # "<session>#<index>"
    session: str
    role: str
    content: str
    has_answer: bool


@dataclass
class Variant:
    name: str
    capture: str  # off / user / all
    index: str  # pair / turn
    app: App
    server: Server
    channel: grpc.Channel
    store: store_pb2_grpc.MemoryStoreStub
    injection: injection_pb2_grpc.MemoryInjectionStub
    history: dict[str, list[inj.Message]] = field(default_factory=dict)
    latency_ms: list[float] = field(default_factory=list)
    injected: list[tuple[str, int, list[str]]] = field(default_factory=list)  # channel, turn
    size_before: int = 0

    def close(self) -> None:
        self.channel.close()
        self.server.stop(grace=1)


def serve(root: Path, name: str, embedder: Embedder, capture: str = "off",
          index: str = "turn") -> Variant:
    data_dir = root / name
    config = Config(defaults=MemoryInjectionConfig(capture=capture))
    settings = ConfigStore(data_dir / CONFIG_FILENAME, config, None)
    app = App.open(ServerConfig(listen="127.0.0.1:0", data_dir=str(data_dir),
                                http=HttpConfig(listen="")), embedder=embedder, settings=settings)
    assert app.injector.capture is not None
    app.injector.capture.drain.index = index
    server = create_server(app)
    server.start()
    channel = grpc.insecure_channel(f"127.0.0.1:{server.port}")
    return Variant(name, capture, index, app, server, channel,
                   store_pb2_grpc.MemoryStoreStub(channel),
                   injection_pb2_grpc.MemoryInjectionStub(channel))


def sessions_of(data: list[dict], picked: list[Question]) -> dict[str, list[Turn]]:  # type: ignore[type-arg]
    wanted = {q.id for q in picked}
    out: dict[str, list[Turn]] = {}
    for item in data:
        if item["question_id"] not in wanted:
            continue
        for sid, session in zip(item["haystack_session_ids"], item["haystack_sessions"],
                                strict=True):
            out.setdefault(sid, [Turn(f"{sid}#{i}", sid, t["role"], t["content"],
                                      bool(t.get("has_answer")))
                                 for i, t in enumerate(session) if t["content"].strip()])
    return out


def replay(variants: list[Variant], sessions: dict[str, list[Turn]]) -> int:
    """Every session through every variant, turn by turn, the variants' order rotating."""
    user_turns = 0
    for n, (sid, turns) in enumerate(sorted(sessions.items())):
        steps = _steps(turns)
        for k, (user, reply) in enumerate(steps):
            user_turns += 1
            order = variants[(n + k) % len(variants):] + variants[:(n + k) % len(variants)]
            for v in order:
                _step(v, sid, k + 1, user, reply)
        for v in variants:  # the history of the session's end (the agent's next turn's)
            v.injection.PruneHistory(inj.PruneHistoryRequest(
                agent_id=AGENT, channel_id=sid, messages=v.history.get(sid, [])))
    return user_turns


def _steps(turns: list[Turn]) -> list[tuple[Turn, Turn | None]]:
    """(user turn, the assistant reply after it) pairs; a reply with no user turn before it
    is kept as the reply of the previous one."""
    steps: list[tuple[Turn, Turn | None]] = []
    for t in turns:
        if t.role == "user":
            steps.append((t, None))
        elif steps and steps[-1][1] is None:
            steps[-1] = (steps[-1][0], t)
    return steps


def _step(v: Variant, sid: str, turn: int, user: Turn, reply: Turn | None,
          user_id: str = "") -> inj.InjectResponse:
    """One turn of the loop: PruneHistory, Inject (as ``user_id``), the history grows."""
    history = v.history.setdefault(sid, [])
    if history:
        pruned = v.injection.PruneHistory(inj.PruneHistoryRequest(
            agent_id=AGENT, channel_id=sid, messages=history))
        history[:] = list(pruned.messages)
    start = time.perf_counter()
    got = v.injection.Inject(inj.InjectRequest(agent_id=AGENT, channel_id=sid,
                                               text=user.content, source="user",
                                               user_id=user_id))
    v.latency_ms.append((time.perf_counter() - start) * 1000)
    v.injected.append((sid, got.turn, [item.id for item in got.items]))
    if got.block:
        history.append(inj.Message(role=inj.ROLE_USER, content=got.block))
    history.append(inj.Message(role=inj.ROLE_USER, content=user.content))
    if reply is not None:
        history.append(inj.Message(role=inj.ROLE_ASSISTANT, content=reply.content))
    return got


def import_explicit(v: Variant, sessions: dict[str, list[Turn]]) -> None:
    for roles in ROLES:
        def items(roles: str = roles) -> Iterator[s.UpsertMemoryRequest]:
            for sid, turns in sorted(sessions.items()):
                for t in turns:
                    if t.role in ROLES[roles]:
                        yield s.UpsertMemoryRequest(memory=m.Memory(
                            id=f"{roles}:{t.id}", content=t.content,
                            type=m.MEMORY_TYPE_OBSERVATION, agent_id=f"{AGENT}-{roles}",
                            channel_id=sid, source="import"))
        v.store.ImportMemories(items())


def turn_ids(v: Variant, sessions: dict[str, list[Turn]]) -> dict[str, list[str]]:
    """memory id -> the turns it was captured from (a deduplicated turn: its memory's)."""
    user_at = {(sid, k + 1): u.id for sid, turns in sessions.items()
               for k, (u, _) in enumerate(_steps(turns))}
    reply_of = {(t.session, assistant_key(t.content)): t.id for turns in sessions.values()
                for t in turns if t.role == "assistant"}
    out: dict[str, list[str]] = {}
    for channel, key, role, turn, memory_id in v.app.db.execute(
            "SELECT channel_id, key, role, turn, memory_id FROM captures WHERE memory_id != ''"):
        found = (user_at.get((channel, int(turn))) if role == "user"
                 else reply_of.get((channel, key)))
        if found is not None:
            out.setdefault(str(memory_id), []).append(found)
    return out


def ranked_turns(ids: list[str], mapping: dict[str, list[str]] | None) -> list[str]:
    if mapping is None:  # explicit: "<roles>:<turn id>"
        return [i.split(":", 1)[1] for i in ids]
    return [t for i in ids for t in mapping.get(i, [])]


def scores(ranked: dict[str, list[str]], qs: list[Question],
           evidence: dict[str, set[str]]) -> tuple[Scores, Scores]:
    return (mean([turn_level(ranked[q.id], evidence[q.id]) for q in qs]),
            mean([session_level(ranked[q.id], set(q.evidence_sessions)) for q in qs]))


def ask(v: Variant, agent: str, qs: list[Question], mapping: dict[str, list[str]] | None,
        ) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    searched, injected = {}, {}
    for q in qs:
        hits = v.store.Search(s.SearchRequest(query=q.text, limit=10, agent_id=agent)).hits
        searched[q.id] = ranked_turns([h.memory.id for h in hits], mapping)
        got = v.injection.Inject(inj.InjectRequest(agent_id=agent, channel_id=f"q-{agent}-{q.id}",
                                                   text=q.text, source="user"))
        injected[q.id] = ranked_turns([item.id for item in got.items][:10], mapping)
    return searched, injected


def own_channel_violations(v: Variant, sessions: dict[str, list[Turn]]) -> int:
    """Items injected into a session's channel that were captured from an earlier turn of it
    (the replay never compacts: every earlier turn is still in the history)."""
    rows: dict[str, list[tuple[str, int]]] = {}
    for channel, turn, memory_id in v.app.db.execute(
            "SELECT channel_id, turn, memory_id FROM captures WHERE memory_id != ''"):
        rows.setdefault(str(memory_id), []).append((str(channel), int(turn)))
    return sum(1 for channel, turn, ids in v.injected for i in ids
               for c, t in rows.get(i, []) if c == channel and t < turn)


def size(v: Variant) -> int:
    v.app.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return v.app.db.size_bytes()


def pct(values: list[float], q: float) -> float:
    return float(np.percentile(values, q)) if values else 0.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--questions", type=int, default=500,
                        help="the first N questions of the oracle set (and their sessions)")
    parser.add_argument("--index", default="turn",
                        help="captured turns' vectors, comma-separated: turn (alone, the "
                             "default), pair (followed by the message before it)")
    args = parser.parse_args()
    data = load_oracle()
    qs = questions(data[: args.questions])
    sessions = sessions_of(data, qs)
    turns = [t for ts in sessions.values() for t in ts]
    embedder = Embedder(bundled_model_files())
    indexes = args.index.split(",")
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        variants = [serve(root, "off", embedder)]
        variants += [serve(root, f"{mode}-{index}", embedder, mode, index)
                     for index in indexes for mode in ("user", "all")]
        explicit = serve(root, "explicit", embedder)
        try:
            for v in variants:
                v.size_before = size(v)
            start = time.perf_counter()
            user_turns = replay(variants, sessions)
            spent = time.perf_counter() - start
            for v in variants:
                assert v.app.injector.capture is not None
                v.app.injector.capture.drain.flush()
            import_explicit(explicit, sessions)
            report(variants, explicit, sessions, turns, qs, user_turns, spent)
        finally:
            for v in [*variants, explicit]:
                v.close()


def report(variants: list[Variant], explicit: Variant, sessions: dict[str, list[Turn]],
           turns: list[Turn], qs: list[Question], user_turns: int, spent: float) -> None:
    seen = {"user": user_turns, "all": len(turns)}
    print(f"{len(qs)} questions, {len(sessions)} sessions, {len(turns)} turns ({user_turns} "
          f"user turns, each an Inject on every server; replay {spent:.0f} s)\n")
    print("| store | turn R@10 Search | session R@10 Search | turn R@10 Inject | session "
          "R@10 Inject | memories | per turn seen |\n|---|---|---|---|---|---|---|")
    for roles in ROLES:
        stored = {t.id for t in turns if t.has_answer and t.role in ROLES[roles]}
        evidence = {q.id: {t for t in stored if t.split("#", 1)[0] in q.evidence_sessions}
                    for q in qs}
        agent = f"{AGENT}-{roles}"
        searched, injected = ask(explicit, agent, qs, None)
        _row(f"explicit ({roles} turns, ImportMemories)", searched, injected, qs, evidence,
             sum(1 for mem in _live(explicit) if mem.agent_id == agent), seen[roles])
        for v in variants:
            if v.capture != roles:
                continue
            mapping = turn_ids(v, sessions)
            memories = sum(1 for mem in _live(v) if mem.source == "capture")
            capture, v.app.injector.capture = v.app.injector.capture, None  # questions: not
            searched, injected = ask(v, AGENT, qs, mapping)                # captured
            v.app.injector.capture = capture
            _row(f"capture = \"{roles}\", index {v.index}", searched, injected, qs, evidence,
                 memories, seen[roles])
    print("\n| server | Inject p50 ms | p99 ms | captures: outcomes | store growth per 1,000 "
          "user turns | own-channel injections while in history |\n|---|---|---|---|---|---|")
    for v in variants:
        outcomes: dict[str, int] = dict(v.app.db.execute(
            "SELECT outcome, count(*) FROM captures GROUP BY outcome"))
        assert v.app.injector.capture is not None
        refused = dict(v.app.injector.capture.refused)
        grown = (size(v) - v.size_before) / user_turns * 1000 / 1e6
        print(f"| {v.name} | {pct(v.latency_ms, 50):.2f} | {pct(v.latency_ms, 99):.2f} | "
              f"{outcomes or '-'}; refused before: {refused or '-'} | {grown:.2f} MB | "
              f"{own_channel_violations(v, sessions)} |")


def _live(v: Variant) -> list[m.Memory]:
    out: list[m.Memory] = []
    token = ""
    while True:
        page = v.store.ListMemories(s.ListMemoriesRequest(all_agents=True, page_size=1000,
                                                          page_token=token))
        out.extend(page.memories)
        token = page.next_page_token
        if not token:
            return out


def _row(name: str, searched: dict[str, list[str]], injected: dict[str, list[str]],
         qs: list[Question], evidence: dict[str, set[str]], memories: int, seen: int) -> None:
    st, ss = scores(searched, qs, evidence)
    it, iss = scores(injected, qs, evidence)
    print(f"| {name} | {st.r10:.3f} | {ss.r10:.3f} | {it.r10:.3f} | {iss.r10:.3f} | "
          f"{memories} | {memories / max(seen, 1):.2f} |")


if __name__ == "__main__":
    from bench.results import recorded

    with recorded("capture_replay"):
        main()
