"""PruneHistory in process on CoQA turns: its time, a cProfile of it, and the reply votes it
chose (two trees' choices compared turn by turn).

Serves ``bench.query_context_cost``'s store (``bench.topic_change``'s 5,432 LongMemEval user
turns) with its config, in this process: CoQA conversations (question, gold answer) go
through the README's loop (``AgentLoop``) with agent "on" (the defaults: query context and
focus on), the servicer (``MemoryInjectionServicer``) called directly; the work a server
defers until a reply is sent (``sidecar.after_reply``) runs after each call, as there. Each
PruneHistory is timed (wall, and the CPU time of its thread); ``--votes FILE`` records every
reply vote (the turn, the reply, the memories in view, the vote); ``--profile`` prints the
cProfile of the PruneHistory calls alone; ``--compare A B`` prints how many of two files'
votes are the same; ``--replay FILE`` casts a file's votes again on the store with nothing
run between them (each vote's thread CPU, and whether it is the vote recorded).

    PYTHONPATH=TREE .venv/bin/python bench/prune_history_inproc.py [--conversations 150]
        [--turns 6] [--coqa ../shared/data/coqa_dev.json] [--votes /tmp/votes.json]
        [--profile] [--capture user]
    .venv/bin/python bench/prune_history_inproc.py --compare /tmp/a.json /tmp/b.json
    PYTHONPATH=TREE .venv/bin/python bench/prune_history_inproc.py --replay /tmp/a.json
        [--rounds 3]

(PYTHONPATH: the tree whose ``sidecar`` is measured, e.g. ``git archive`` of an earlier
commit unpacked; this tree's otherwise.)
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import pstats
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

# Run as a file: ``bench`` from this tree when PYTHONPATH (the tree measured) has none; that
# tree's ``sidecar`` and ``kernels`` stay first.
sys.path.append(str(Path(__file__).resolve().parent.parent))

import numpy as np  # noqa: E402
from memsidecar.v1 import injection_pb2  # noqa: E402
from memsidecar_client.messages import MessageLike, to_messages  # noqa: E402

import sidecar.conversation.focus as focus  # noqa: E402
from bench.agent_loop_replay import AgentLoop, config_text, cpu_flags  # noqa: E402
from bench.query_context_cost import AGENTS, coqa_exchanges  # noqa: E402
from bench.replay_longmemeval import working_copy  # noqa: E402
from bench.topic_change import lme_store  # noqa: E402
from sidecar import after_reply  # noqa: E402
from sidecar.api.injection_servicer import MemoryInjectionServicer  # noqa: E402
from sidecar.api.server_config import ServerConfig  # noqa: E402
from sidecar.app import App  # noqa: E402
from sidecar.embedding.config import EmbeddingConfig  # noqa: E402
from sidecar.records import Viewer  # noqa: E402

AGENT = "on"


class Context:
    """What the servicer asks of a call's context here."""

    def time_remaining(self) -> float:
        return 10.0

    def abort(self, code: object, message: str) -> None:
        raise RuntimeError(f"{code}: {message}")

    def set_trailing_metadata(self, metadata: object) -> None:
        pass

    def code(self) -> None:
        return None


class InProcess:
    """The two calls ``AgentLoop`` makes, on the servicer; PruneHistory timed (and profiled)."""

    def __init__(self, servicer: MemoryInjectionServicer, profile: cProfile.Profile | None):
        self.servicer, self.profile = servicer, profile
        self.wall_ms: list[float] = []
        self.cpu_ms: list[float] = []

    def prune_history(self, history: Sequence[MessageLike], *, max_keep: int | None = None,
                      channel_id: str = "", agent_id: str = "") -> Any:
        request = injection_pb2.PruneHistoryRequest(messages=to_messages(history),
                                                    agent_id=agent_id, channel_id=channel_id)
        if max_keep is not None:
            request.max_keep = max_keep
        token, later = after_reply.bind()
        start, cpu = time.perf_counter(), time.thread_time()
        if self.profile is not None:
            self.profile.enable()
        try:
            reply = self.servicer.PruneHistory(request, Context())  # type: ignore[arg-type]
        finally:
            if self.profile is not None:
                self.profile.disable()
            self.wall_ms.append((time.perf_counter() - start) * 1000)
            self.cpu_ms.append((time.thread_time() - cpu) * 1000)
            after_reply.unbind(token)
        after_reply.run(later)
        return reply

    def inject(self, text: str, *, channel_id: str, agent_id: str = "", source: str = "user",
               turn: int = 0, user_id: str = "") -> Any:
        token, later = after_reply.bind()
        try:
            reply = self.servicer.Inject(injection_pb2.InjectRequest(
                text=text, channel_id=channel_id, agent_id=agent_id, source=source, turn=turn,
                user_id=user_id), Context())  # type: ignore[arg-type]
        finally:
            after_reply.unbind(token)
        after_reply.run(later)
        return reply


def replay(args: argparse.Namespace) -> None:
    model = EmbeddingConfig().model
    agents = "".join(f'\n[[agents]]\nid = "{a}"\n[agents.memory_injection]\n{c}\n'
                     f'capture = "{args.capture}"\n' for a, c in AGENTS.items())
    toml = config_text(None, 10, {"embedding": {"model": model}}) + agents
    talks = coqa_exchanges(args.coqa, args.turns, args.conversations)
    profile = cProfile.Profile() if args.profile else None
    votes: list[list[Any]] = []
    vote = focus.reply_vote

    def recorded(retriever: Any, viewer: Any, asked: str, in_view: Sequence[str],
                 reply: str) -> focus.Votes:
        got = vote(retriever, viewer, asked, in_view, reply)
        votes.append([asked, reply, sorted(in_view), [list(v) for v in got]])
        return got

    focus.reply_vote = recorded  # what ``room.Conversation.reply_votes`` calls
    with working_copy(lme_store(model), toml) as data_dir:
        app = App.open(ServerConfig(listen="127.0.0.1:0", data_dir=str(data_dir)))
        app.warm_up()
        try:
            client = InProcess(MemoryInjectionServicer(app.injector, app.owners), profile)
            for n, talk in enumerate(talks):
                loop = AgentLoop(client, f"{AGENT}-coqa-{n}", AGENT)  # type: ignore[arg-type]
                for question, answer in talk:
                    loop.turn(question, answer)
        finally:
            app.close()
    wall, cpu = (np.percentile(v, [50, 90, 99]) for v in (client.wall_ms, client.cpu_ms))
    print(f"PruneHistory in process, {len(client.wall_ms)} calls: wall p50 {wall[0]:.3f} / "
          f"p90 {wall[1]:.3f} / p99 {wall[2]:.3f} ms; its thread's CPU p50 {cpu[0]:.3f} / "
          f"p90 {cpu[1]:.3f} ms; {len(votes)} reply votes, {sum(bool(v[3]) for v in votes)} "
          f"for a memory; CPU {cpu_flags()}, load average {os.getloadavg()[0]:.1f}")
    if args.votes is not None:
        args.votes.write_text(json.dumps(votes), encoding="utf-8")
    if profile is not None:
        pstats.Stats(profile).sort_stats("cumulative").print_stats(40)


def replay_votes(path: Path, rounds: int) -> None:
    """Each vote of ``path`` (``--votes``) cast again on the store, nothing else run between:
    the thread CPU of ``focus.reply_vote`` alone, and how many give the vote recorded."""
    votes = json.loads(path.read_text(encoding="utf-8"))
    model = EmbeddingConfig().model
    cpu_us: list[float] = []
    same = 0
    with working_copy(lme_store(model), config_text(None, 10, {"embedding": {"model": model}})
                      ) as data_dir:
        app = App.open(ServerConfig(listen="127.0.0.1:0", data_dir=str(data_dir)))
        app.warm_up()
        try:
            retriever, viewer = app.injector.retriever, Viewer(AGENT)
            for round_ in range(rounds):
                for asked, reply, in_view, recorded in votes:
                    start = time.thread_time()
                    got = focus.reply_vote(retriever, viewer, asked, in_view, reply)
                    cpu_us.append((time.thread_time() - start) * 1e6)
                    if round_ == 0:
                        same += [list(v) for v in got] == recorded
        finally:
            app.close()
    p50, p90 = np.percentile(cpu_us, [50, 90])
    print(f"{len(votes)} reply votes x {rounds}: thread CPU p50 {p50:.1f} / mean "
          f"{np.mean(cpu_us):.1f} / p90 {p90:.1f} us; the recorded vote: {same} / {len(votes)}; "
          f"CPU {cpu_flags()}, load average {os.getloadavg()[0]:.1f}")


def compare(a: Path, b: Path) -> None:
    one, other = (json.loads(p.read_text(encoding="utf-8")) for p in (a, b))
    same_turns = sum(x[:3] == y[:3] for x, y in zip(one, other, strict=False))
    same = sum(x == y for x, y in zip(one, other, strict=False))
    print(f"{len(one)} / {len(other)} reply votes; the same turn, reply and view: {same_turns}; "
          f"the same vote too: {same} ({same / max(1, len(one)):.1%}); votes for a memory: "
          f"{sum(bool(x[3]) for x in one)} / {sum(bool(y[3]) for y in other)}")


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--conversations", type=int, default=150)
    parser.add_argument("--turns", type=int, default=6)
    parser.add_argument("--coqa", type=Path, default=Path("../shared/data/coqa_dev.json"))
    parser.add_argument("--votes", type=Path, default=None)
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--capture", default="off", help='the agents\' capture mode ("user")')
    parser.add_argument("--compare", type=Path, nargs=2, default=None)
    parser.add_argument("--replay", type=Path, default=None,
                        help="cast the votes of a --votes file again, timing the vote alone")
    parser.add_argument("--rounds", type=int, default=3, help="--replay: passes over them")
    args = parser.parse_args(argv)
    if args.compare is not None:
        compare(*args.compare)
    elif args.replay is not None:
        replay_votes(args.replay, args.rounds)
    else:
        replay(args)


if __name__ == "__main__":
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    main()
