"""Many users, one agent, on LongMemEval (oracle): every question is a different end user.

One real server (in-process, gRPC on a free port, its own data dir) with ``capture = "user"``
replays each question's sessions as the agent loop does (``PruneHistory``, then ``Inject``
of the user turn, the block, the turn and the recorded reply appended to the history), each
session a channel of its own, every Inject naming the question's user (``user-<question>``).
The sessions of all users are interleaved turn by turn, as a support agent's customers talk
at the same time. Then every user asks their question on a new channel (capture off for the
questions, so they do not change what the next ones see): ``Search`` (limit 10) and
``Inject``, both with the user's ``user_id``.

Reported, over every turn of the replay and every question:
- exposures: items of another user in any block, and hits of another user in any Search
  (must be 0), and the same for a Search and an Inject without ``user_id`` (must be 0);
- own recall: turn and session R@10 of the evidence turns among the user's own captures,
  beside the same turns written into one scope that every question sees (``ImportMemories``
  as one agent: the recall of a store without users, where every user's words compete);
- Inject p50 / p99 with ``user_id`` during the replay.

Run:  .venv/bin/python -m bench.user_replay [--questions 200]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

from memsidecar.v1 import injection_pb2 as inj
from memsidecar.v1 import memory_pb2 as m
from memsidecar.v1 import store_pb2 as s

from bench.capture_replay import (
    AGENT,
    Turn,
    Variant,
    _step,
    _steps,
    pct,
    ranked_turns,
    scores,
    serve,
    sessions_of,
    turn_ids,
)
from bench.lme_data import Question, load_oracle, questions
from sidecar.embedding import Embedder, bundled_model_files

Sessions = dict[str, list[Turn]]


def user_of(question: Question) -> str:
    return f"user-{question.id}"


def users_sessions(data: list[dict], qs: list[Question]) -> dict[str, Sessions]:  # type: ignore[type-arg]
    """Each user's sessions, their channels named ``<user>/<session>`` (two questions may
    share a session: each user then has a copy)."""
    out: dict[str, Sessions] = {}
    for q in qs:
        mine = sessions_of(data, [q])
        user = user_of(q)
        out[user] = {f"{user}/{sid}": [Turn(f"{user}/{t.id}", f"{user}/{sid}", t.role,
                                            t.content, t.has_answer) for t in turns]
                     for sid, turns in mine.items()}
    return out


class Exposures:
    def __init__(self) -> None:
        self.items = 0  # injected or found items, all calls
        self.foreign = 0  # of which another user's
        self.anonymous = 0  # a user's memory given to a call without user_id

    def check(self, owners: list[str], user: str) -> None:
        self.items += len(owners)
        if user:
            self.foreign += sum(1 for o in owners if o and o != user)
        else:
            self.anonymous += sum(1 for o in owners if o)


def replay(v: Variant, users: dict[str, Sessions], seen: Exposures) -> int:
    """Every user's sessions, their turns interleaved (one turn of each user in rotation)."""
    queues = {user: [(sid, k + 1, u, r) for sid, turns in sorted(sessions.items())
                     for k, (u, r) in enumerate(_steps(turns))]
              for user, sessions in users.items()}
    user_turns = 0
    while any(queues.values()):
        for user, queue in queues.items():
            if not queue:
                continue
            sid, turn, said, reply = queue.pop(0)
            user_turns += 1
            got = _step(v, sid, turn, said, reply, user)
            seen.check(owners(v, [item.id for item in got.items]), user)
            if not queue or queue[0][0] != sid:  # the session ends: its last history
                v.injection.PruneHistory(inj.PruneHistoryRequest(
                    agent_id=AGENT, channel_id=sid, messages=v.history.get(sid, [])))
    return user_turns


def owners(v: Variant, ids: list[str]) -> list[str]:
    """The user_id of each memory (read from the store: what the call was given)."""
    if not ids:
        return []
    marks = ",".join("?" * len(ids))
    found = dict(v.app.db.execute(f"SELECT id, user_id FROM memories WHERE id IN ({marks})",
                                  tuple(ids)))
    return [str(found.get(i, "")) for i in ids]


def ask(v: Variant, qs: list[Question], mapping: dict[str, list[str]] | None, seen: Exposures,
        with_user: bool = True) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    searched, injected = {}, {}
    for q in qs:
        user = user_of(q) if with_user else ""
        hits = v.store.Search(s.SearchRequest(query=q.text, limit=10, agent_id=AGENT,
                                              user_id=user)).hits
        ids = [h.memory.id for h in hits]
        seen.check(owners(v, ids), user)
        searched[q.id] = ranked_turns(ids, mapping)
        got = v.injection.Inject(inj.InjectRequest(
            agent_id=AGENT, channel_id=f"ask-{q.id}-{int(with_user)}", text=q.text,
            source="user", user_id=user))
        ids = [item.id for item in got.items]
        seen.check(owners(v, ids), user)
        injected[q.id] = ranked_turns(ids[:10], mapping)
    return searched, injected


def import_one_scope(v: Variant, users: dict[str, Sessions]) -> None:
    """The users' turns written into one agent scope, no user: a store without users."""
    def items() -> Iterator[s.UpsertMemoryRequest]:
        for sessions in users.values():
            for sid, turns in sorted(sessions.items()):
                for t in turns:
                    if t.role == "user":
                        yield s.UpsertMemoryRequest(memory=m.Memory(
                            id=f"user:{t.id}", content=t.content,
                            type=m.MEMORY_TYPE_OBSERVATION, agent_id=AGENT, channel_id=sid,
                            source="import"))
    v.store.ImportMemories(items())


def evidence_of(users: dict[str, Sessions], qs: list[Question]) -> dict[str, set[str]]:
    out = {}
    for q in qs:
        user = user_of(q)
        out[q.id] = {t.id for sid, turns in users[user].items() for t in turns
                     if t.has_answer and t.role == "user"
                     and sid in q.evidence_sessions}
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--questions", type=int, default=200,
                        help="the first N questions of the oracle set: N users")
    args = parser.parse_args()
    data = load_oracle()
    qs = questions(data[: args.questions])
    users = users_sessions(data, qs)
    # session-level scoring reads the evidence sessions under their per-user channel names
    qs = [replace(q, evidence_sessions=frozenset(f"{user_of(q)}/{sid}"
                                                 for sid in q.evidence_sessions)) for q in qs]
    evidence = evidence_of(users, qs)
    embedder = Embedder(bundled_model_files())
    seen, asked, anonymous = Exposures(), Exposures(), Exposures()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        v = serve(root, "users", embedder, "user")
        scope = serve(root, "one-scope", embedder)
        try:
            start = time.perf_counter()
            user_turns = replay(v, users, seen)
            spent = time.perf_counter() - start
            assert v.app.injector.capture is not None
            v.app.injector.capture.drain.flush()
            import_one_scope(scope, users)
            mapping = turn_ids(v, {sid: t for ss in users.values() for sid, t in ss.items()})
            capture, v.app.injector.capture = v.app.injector.capture, None  # questions: not
            searched, injected = ask(v, qs, mapping, asked)                # captured
            ask(v, qs, mapping, anonymous, with_user=False)
            v.app.injector.capture = capture
            base_s, base_i = ask(scope, qs, None, Exposures(), with_user=False)
            report(qs, evidence, user_turns, spent, v, seen, asked, anonymous,
                   (searched, injected), (base_s, base_i))
        finally:
            v.close()
            scope.close()


def report(qs: list[Question], evidence: dict[str, set[str]], user_turns: int, spent: float,
           v: Variant, seen: Exposures, asked: Exposures, anonymous: Exposures,
           mine: tuple[dict[str, list[str]], dict[str, list[str]]],
           base: tuple[dict[str, list[str]], dict[str, list[str]]]) -> None:
    print(f"{len(qs)} users (one question each), {user_turns} user turns interleaved "
          f"(replay {spent:.0f} s)\n")
    print("| calls | items given | another user's | a user's to a call without user_id |\n"
          "|---|---|---|---|")
    for name, e in (("replay Injects (with user_id)", seen),
                    ("questions: Search + Inject with user_id", asked),
                    ("questions: Search + Inject without user_id", anonymous)):
        print(f"| {name} | {e.items} | {e.foreign} | {e.anonymous} |")
    print("\n| store | turn R@10 Search | session R@10 Search | turn R@10 Inject | "
          "session R@10 Inject |\n|---|---|---|---|---|")
    for name, (searched, injected) in (("per user (capture, user_id)", mine),
                                       ("one scope, no users (ImportMemories)", base)):
        st, ss = scores(searched, qs, evidence)
        it, iss = scores(injected, qs, evidence)
        print(f"| {name} | {st.r10:.3f} | {ss.r10:.3f} | {it.r10:.3f} | {iss.r10:.3f} |")
    print(f"\nInject with user_id during the replay: p50 {pct(v.latency_ms, 50):.2f} ms, "
          f"p99 {pct(v.latency_ms, 99):.2f} ms")


if __name__ == "__main__":
    from bench.results import recorded

    with recorded("user_replay"):
        main()
