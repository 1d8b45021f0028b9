"""The topic-change guard: a LongMemEval question asked alone vs after two unrelated ones.

The store is the search-quality bench's (``bench/longmemeval_quality.py``, default: user turns,
each session's turns under its session's channel; the sidecar's default embedding model
unless ``--model``), built and cached the same way. Each of the 470 non-abstention questions
is asked through the README's agent loop (PruneHistory keeping 3 blocks -> Inject -> block,
question and gold answer appended):

- alone: the first turn of a fresh channel;
- after a topic change: the third turn of a fresh channel whose first two turns are two
  other questions (the next ones in a fixed shuffled order whose evidence sessions share
  none with the question's or with each other's), their gold answers as the replies;
- in sequence (``--sequence N``): the questions in a fixed shuffled order, N after one
  another on each channel (a user asking one question after another about a long shared
  history, each its own turn).

Scored on what the model has in view at the question (its block and the blocks the pruned
history still holds): turn R@k = the share of the question's answer-bearing turns in view,
session R@k = the share of its evidence sessions with a turn in view, k = ``max_total``
(10 unless ``--config`` sets it). Own-hit retention (every turn but the alone ones): of the
memories the question's block holds when asked alone, those in its block or in view; then the
same of the first ``query_context_own_hits`` of them (the search's top hits).

    .venv/bin/python -m bench.topic_change [--config extra.toml] [--limit 100] [--label L]
        [--sequence 10]
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from memsidecar_client import Client

from bench.agent_loop_replay import (
    AgentLoop,
    config_text,
    label_of,
    own_hit_retention,
    report,
    save_index,
    served,
)
from bench.conversation_followups import GUARANTEED
from bench.lme_data import (
    CACHE,
    Question,
    cached_embeddings,
    load_oracle,
    pooled_turns,
    questions,
    store_suffix,
)
from bench.replay_longmemeval import working_copy
from bench.results import RESULTS
from bench.store_build import build_store
from sidecar.embedding.config import EmbeddingConfig
from sidecar.embedding.models import MODEL_NAMES

MAX_TOTAL = 10
SEED = 20261127
AGENT = "lme-topic"


def lme_store(model: str) -> Path:
    """The search-quality bench's default store (user turns, channel = session), built on
    first use from its cached embeddings, with its hnsw index saved."""
    turns = pooled_turns(load_oracle(), ("user",))
    vectors = cached_embeddings([t.content for t in turns], "lme_turns_user", model)
    data_dir = CACHE / f"lme_store_user{store_suffix(model)}_channels"
    build_store(data_dir, [t.id for t in turns], [t.content for t in turns], vectors,
                model=model, channels=[t.session_id for t in turns])
    save_index(data_dir)
    return data_dir


def predecessors(qs: Sequence[Question], seed: int = SEED) -> dict[str, tuple[int, int]]:
    """For each question, two others (indices into ``qs``) that follow it in a fixed shuffled
    order and share no evidence session with it or with each other."""
    order = [int(i) for i in np.random.default_rng(seed).permutation(len(qs))]
    out = {}
    for pos, i in enumerate(order):
        picked: list[int] = []
        used = set(qs[i].evidence_sessions)
        for step in range(1, len(order)):
            j = order[(pos + step) % len(order)]
            if used.isdisjoint(qs[j].evidence_sessions):
                picked.append(j)
                used |= qs[j].evidence_sessions
                if len(picked) == 2:
                    break
        out[qs[i].id] = (picked[0], picked[1])
    return out


@dataclass
class Scores:
    turn: list[float] = field(default_factory=list)
    session: list[float] = field(default_factory=list)
    own_turn: list[float] = field(default_factory=list)
    inject_ms: list[float] = field(default_factory=list)
    # Per turn asked after others: ``retention`` of what its block holds when asked alone.
    retained: list[tuple[int, int, int, int, int]] = field(default_factory=list)

    def add(self, view: set[str], own: set[str], evidence: set[str], q: Question,
            ms: float, retained: tuple[int, int, int, int, int] | None = None) -> None:
        """``retained``: the turn's ``own_hit_retention`` (None: asked alone)."""
        self.inject_ms.append(ms)
        if retained is not None:
            self.retained.append(retained)
        sessions = {memory_id.split("#", 1)[0] for memory_id in view}
        self.session.append(len(sessions & q.evidence_sessions) / len(q.evidence_sessions))
        if evidence:
            self.turn.append(len(view & evidence) / len(evidence))
            self.own_turn.append(len(own & evidence) / len(evidence))


def run(data_dir: Path, qs: Sequence[Question], chosen: Sequence[Question],
        answers: dict[str, str], evidence: dict[str, set[str]],
        prepend: int = 0, sequence: int = 0) -> dict[str, Scores]:
    before = predecessors(qs)
    scores = {"alone": Scores(), "after a topic change": Scores()}
    alone: dict[str, tuple[str, ...]] = {}
    with served(data_dir) as client:
        for n, q in enumerate(chosen):
            seen = AgentLoop(client, f"alone-{n}", AGENT).turn(q.text, answers[q.id])
            alone[q.id] = seen.ranked
            scores["alone"].add(seen.own | seen.held, seen.own, evidence[q.id], q,
                                seen.inject_ms)
            loop = AgentLoop(client, f"after-{n}", AGENT, prepend)
            for j in before[q.id]:
                loop.turn(qs[j].text, answers[qs[j].id])
            seen = loop.turn(q.text, answers[q.id])
            scores["after a topic change"].add(seen.own | seen.held, seen.own,
                                               evidence[q.id], q, seen.inject_ms,
                                               own_hit_retention(client, loop, seen,
                                                                 alone[q.id], GUARANTEED))
        if sequence > 0:
            scores[f"in sequence ({sequence} a channel)"] = in_sequence(
                client, chosen, answers, evidence, alone, sequence, prepend)
    return scores


def in_sequence(client: Client, chosen: Sequence[Question], answers: dict[str, str],
                evidence: dict[str, set[str]], alone: dict[str, tuple[str, ...]],
                per_channel: int,
                prepend: int = 0) -> Scores:
    """The questions in a fixed shuffled order, ``per_channel`` after one another on each
    channel, each turn scored with its own-hit retention against ``alone``."""
    order = [int(i) for i in np.random.default_rng(SEED + 1).permutation(len(chosen))]
    scores = Scores()
    for start in range(0, len(order), per_channel):
        loop = AgentLoop(client, f"sequence-{start}", AGENT, prepend)
        for i in order[start:start + per_channel]:
            q = chosen[i]
            seen = loop.turn(q.text, answers[q.id])
            scores.add(seen.own | seen.held, seen.own, evidence[q.id], q, seen.inject_ms,
                       own_hit_retention(client, loop, seen, alone[q.id], GUARANTEED))
    return scores


HEADER = ("| label | question asked | questions | turn R@k in view | session R@k in view "
          f"| turn R@k own block | own-hit retention (all; top {GUARANTEED}) "
          "| Inject p50 / p99 ms |\n"
          "|---|---|---|---|---|---|---|---|")


def rows(label: str, scores: dict[str, Scores]) -> list[str]:
    out = []
    for name, s in scores.items():
        p50, p99 = np.percentile(s.inject_ms, [50, 99])
        kept = "-"
        if s.retained:
            total, held, top, top_held, twins = (sum(x) for x in zip(*s.retained, strict=True))
            kept = (f"{held:,} / {total:,}; {top_held:,} / {top:,} ({twins} of the misses "
                    "duplicates of a memory in view)")
        out.append(f"| {label} | {name} | {len(s.session)} | {np.mean(s.turn):.3f} "
                   f"| {np.mean(s.session):.3f} | {np.mean(s.own_turn):.3f} | {kept} "
                   f"| {p50:.1f} / {p99:.1f} |")
    return out


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--config", type=Path, default=None,
                        help="TOML merged into the sidecar's config file")
    parser.add_argument("--limit", type=int, default=0, help="first N questions (0: all)")
    parser.add_argument("--label", default="")
    parser.add_argument("--model", choices=MODEL_NAMES, default=EmbeddingConfig().model,
                        help="[embedding] model of the store and the sidecar (default: the "
                             "sidecar's default)")
    parser.add_argument("--out", type=Path, default=RESULTS / "topic_change.md")
    parser.add_argument("--prepend-exchanges", type=int, default=0,
                        help="the client prepends this many earlier question/answer pairs to "
                             "Inject's text (the naive alternative; 0: the question alone)")
    parser.add_argument("--sequence", type=int, default=0,
                        help="also ask the questions in a shuffled order, this many after one "
                             "another on each channel (0: not)")
    args = parser.parse_args(argv)
    data = load_oracle()
    qs = questions(data)
    answers = {str(q["question_id"]): str(q["answer"]) for q in data}
    data_dir = lme_store(args.model)
    stored = {t.id for t in pooled_turns(data, ("user",)) if t.has_answer}
    evidence = {q.id: {t for t in stored if t.split("#", 1)[0] in q.evidence_sessions}
                for q in qs}
    chosen = qs[: args.limit] if args.limit else qs
    toml = config_text(args.config, MAX_TOTAL, {"embedding": {"model": args.model}})
    label = label_of(args.config, args.label, args.prepend_exchanges)
    start = time.perf_counter()
    with working_copy(data_dir, toml) as copy:
        scores = run(copy, qs, chosen, answers, evidence, args.prepend_exchanges,
                     args.sequence)
    report(args.out, "topic_change", HEADER, rows(label, scores), toml,
           f"{len(chosen)} questions", start)


if __name__ == "__main__":
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    main()
