"""What the query context costs an Inject: follow-up turns of 16 and 64 tokens, context off,
on without the conversation focus, and on (the defaults), interleaved call by call on one
server.

Serves a copy of the topic-change bench's LongMemEval store (5,432 memories, built and cached
by ``bench.topic_change``) with three agents: ``off`` (``query_context_turns = 0``),
``context`` (``query_context_focus = 0``) and ``on`` (the defaults). Conversations of
``--turns`` turns run through the README's loop (PruneHistory -> Inject -> block, text, a
reply), the agents' turns in a shuffled order each turn, so all see the same load. Each
turn's text is a LongMemEval user turn cut to exactly 16 or 64 model tokens; the reply is
the session's next assistant turn; ``--coqa`` adds CoQA conversations (question, gold
answer: short follow-ups, most of them leaning on their context). Only turns 2.. are timed
(the first turn has no context either way). Prints client-side Inject p50/p99 per length and
setting, over all follow-ups and over those the context applied to, with the p50/p99 of the
PruneHistory before each of those turns (where the reply's focus vote and the next turn's
anchors are worked out), and appends them to bench/results/query_context_cost.md.

With ``--baseline TREE`` (a source tree, e.g. ``git archive`` of an earlier commit unpacked)
a second sidecar imports ``sidecar`` and ``kernels`` from it and serves another copy of the
store; every turn goes to both, the six agents in one shuffled order (its rows: "baseline
<agent>").

    .venv/bin/python -m bench.query_context_cost [--conversations 60] [--turns 6]
        [--coqa ../shared/data/coqa_dev.json] [--baseline /tmp/before]
"""

from __future__ import annotations

import argparse
import json
import os
import random
from collections.abc import Sequence
from contextlib import ExitStack
from pathlib import Path

import numpy as np

from bench.agent_loop_replay import (
    AgentLoop,
    append_block,
    config_text,
    cpu_flags,
    python_path,
    served,
)
from bench.lme_data import load_oracle
from bench.replay_longmemeval import working_copy
from bench.results import RESULTS
from bench.topic_change import lme_store
from sidecar.embedding.config import EmbeddingConfig
from sidecar.embedding.model_files import TOKENIZER
from sidecar.embedding.onnx import load_tokenizer

LENGTHS = (16, 64)
# off: the text alone; context: the query context without the focus; on: the defaults.
AGENTS = {"off": "query_context_turns = 0", "context": "query_context_focus = 0", "on": ""}


def exchanges(data: list[dict], tokens: int, turns: int,  # type: ignore[type-arg]
              conversations: int) -> list[list[tuple[str, str]]]:
    """Per haystack session, its first ``turns`` (user text cut to ``tokens`` tokens, the
    assistant's reply) pairs; sessions with fewer pairs or shorter texts are skipped."""
    tokenizer = load_tokenizer(str(TOKENIZER), 512)
    out = []
    for entry in data:
        for session in entry["haystack_sessions"]:
            pairs = [(a["content"], b["content"])
                     for a, b in zip(session, session[1:], strict=False)
                     if a["role"] == "user" and b["role"] == "assistant"]
            cut = [(cut_to(tokenizer, q, tokens), r[:2000]) for q, r in pairs[:turns]]
            if len(cut) == turns and all(q for q, _ in cut):
                out.append(cut)
            if len(out) == conversations:
                return out
    return out


def coqa_exchanges(path: Path, turns: int,
                   conversations: int) -> list[list[tuple[str, str]]]:
    """The first ``turns`` (question, gold answer) pairs of the file's first conversations
    (``bench.conversation_followups``'s format)."""
    out = []
    for item in json.loads(path.read_text(encoding="utf-8"))["data"][:conversations]:
        pairs = [(q["input_text"], a["input_text"])
                 for q, a in zip(item["questions"], item["answers"], strict=True)]
        if len(pairs) >= turns:
            out.append(pairs[:turns])
    return out


def cut_to(tokenizer: object, text: str, tokens: int) -> str:
    """``text``'s first ``tokens`` word-piece tokens as text ("" when it has fewer)."""
    encoded = tokenizer.encode(text, add_special_tokens=False)  # type: ignore[attr-defined]
    if len(encoded.ids) < tokens:
        return ""
    end = encoded.offsets[tokens - 1][1]
    return text[:end]


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--conversations", type=int, default=60)
    parser.add_argument("--turns", type=int, default=4)
    parser.add_argument("--coqa", type=Path, default=None,
                        help="also time CoQA conversations (question, gold answer) of this "
                             "file: short follow-ups, most of them leaning on their context")
    parser.add_argument("--baseline", type=Path, default=None,
                        help="a source tree (e.g. `git archive` of an earlier commit) whose "
                             "sidecar serves a copy of the store, each turn sent to both")
    args = parser.parse_args(argv)
    data = load_oracle()
    model = EmbeddingConfig().model
    agents = "".join(f'\n[[agents]]\nid = "{a}"\n[agents.memory_injection]\n{c}\n'
                     for a, c in AGENTS.items())
    toml = config_text(None, 10, {"embedding": {"model": model}}) + agents
    # (tokens or "coqa", turns the context applied to or "all", agent) -> (Inject ms,
    # PruneHistory ms) per turn
    ms: dict[tuple[int | str, str, str], list[tuple[float, float]]] = {}
    talks: dict[int | str, list[list[tuple[str, str]]]] = {
        tokens: exchanges(data, tokens, args.turns, args.conversations) for tokens in LENGTHS}
    if args.coqa is not None:
        talks["coqa"] = coqa_exchanges(args.coqa, args.turns, args.conversations)
    with ExitStack() as stack:
        clients = {"": stack.enter_context(served(stack.enter_context(
            working_copy(lme_store(model), toml))))}
        if args.baseline is not None:
            with python_path(args.baseline):
                clients = {"baseline ": stack.enter_context(served(stack.enter_context(
                    working_copy(lme_store(model), toml)))), "": clients[""]}
        for tokens, conversations in talks.items():
            for n, talk in enumerate(conversations):
                loops = {f"{tree}{a}": AgentLoop(c, f"{a}-{tokens}-{n}", a)
                         for tree, c in clients.items() for a in AGENTS}
                spent: dict[str, list[tuple[float, float]]] = {a: [] for a in loops}
                for t, (text, reply) in enumerate(talk):
                    # a shuffled order: forward and backward in turn, one sidecar's "on"
                    # agent always came after one of its own Injects, the other's half the
                    # time after the other sidecar's (0.2-0.3 ms apart at p50, trees swapped)
                    order = list(loops.items())
                    random.Random(f"{tokens}-{n}-{t}").shuffle(order)
                    for agent, loop in order:
                        seen = loop.turn(text, reply)
                        spent[agent].append((seen.inject_ms, seen.prune_ms))
                trace = clients[""].get_injection_trace(f"on-{tokens}-{n}", agent_id="on")
                applied = [turn.context_gate > 0 for turn in trace.turns]
                for agent, values in spent.items():
                    for t in range(1, len(values)):
                        ms.setdefault((tokens, "all", agent), []).append(values[t])
                        if applied[t]:
                            ms.setdefault((tokens, "applied", agent), []).append(values[t])
    header = ("| tokens | follow-up turns | query context | turns | Inject p50 ms | p99 ms "
              "| PruneHistory p50 ms | p99 ms |\n|---|---|---|---|---|---|---|---|")
    lines = []
    for (tokens, kind, agent), values in sorted(ms.items(), key=lambda kv: str(kv[0])):
        (p50, prune50), (p99, prune99) = np.percentile(values, [50, 99], axis=0)
        which = "all" if kind == "all" else "those it applied to"
        lines.append(f"| {tokens} | {which} | {agent} | {len(values)} | {p50:.2f} | {p99:.2f} "
                     f"| {prune50:.2f} | {prune99:.2f} |")
    append_block(RESULTS / "query_context_cost.md", "query_context_cost", header, lines, toml)
    print(header)
    print("\n".join(lines))
    print(f"CPU {cpu_flags()}, load average {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    main()
