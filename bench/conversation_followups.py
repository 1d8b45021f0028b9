"""Follow-up questions through the agent loop: CoQA conversations replayed over a real sidecar.

Every sentence of every story is one memory of one agent (no channel), imported through the
server (``ImportMemoriesStream``) once and cached under ``bench/.cache/``. Each conversation
is then driven on a channel of its own exactly as the README's agent loop does:
PruneHistory (keep 3 blocks, with the channel) -> Inject (the question, ``source="user"``) ->
the block (if any) and the question as user messages -> the gold answer as the assistant's
reply. A turn's evidence is the sentence(s) overlapping its answer's rationale
(``span_start``/``span_end``; unanswerable turns are skipped); it is *in view* when one of
those memories is in the turn's block or in a block the pruned history still holds.

    .venv/bin/python -m bench.conversation_followups --data ../shared/data/coqa_dev.json
        [--config extra.toml] [--limit 50] [--label "context on"] [--out FILE]

The sidecar runs as a ``memsidecar serve`` process with ``[defaults.memory_injection]
max_total = 5`` and the ``--config`` file merged over it (its keys win).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from memsidecar.v1 import memory_pb2, store_pb2
from memsidecar_client import Client

from bench.agent_loop_replay import (
    AgentLoop,
    config_text,
    label_of,
    report,
    save_index,
    served,
)
from bench.lme import CACHE
from bench.replay_longmemeval import working_copy
from bench.results import RESULTS

AGENT = "coqa"
MAX_TOTAL = 5  # items per block in the default run
SPLITTER_VERSION = "1"  # bump when split_sentences changes: the cached store is rebuilt
# Words that refer back to an earlier turn: a follow-up holding one is "elliptical" (as is
# any follow-up of at most ELLIPTIC_WORDS words).
BACK_REFERENCES = frozenset({
    "he", "him", "his", "himself", "she", "her", "hers", "herself", "it", "its", "itself",
    "they", "them", "their", "theirs", "themselves", "this", "that", "these", "those",
    "there", "then", "else", "other", "others", "another", "also", "too", "again", "same",
    "one", "ones",
})
ELLIPTIC_WORDS = 4
KINDS = ("first turn", "follow-up", "elliptical follow-up")
_BOUNDARY = re.compile(r"[.!?]+[\"'”’)\]]*(?=\s)|\n")
_ABBREVIATIONS = frozenset({"mr", "mrs", "ms", "dr", "st", "jr", "sr", "prof", "mt", "vs",
                            "no", "gen", "col", "capt", "lt", "sgt", "rev", "gov", "sen"})
_WORD = re.compile(r"[a-z']+")


def split_sentences(text: str) -> list[tuple[int, int]]:
    """Sentence spans ``[start, end)`` of ``text``, whitespace stripped: a sentence ends at
    ``.``/``!``/``?`` (and closing quotes or brackets) before whitespace, or at a newline;
    not after a short title abbreviation ("Mr."). Pieces without a letter or digit are
    dropped."""
    spans = []
    start = 0
    for m in _BOUNDARY.finditer(text):
        word = text[max(0, m.start() - 5):m.start()].split()
        if m.group() == "." and word and word[-1].lower().strip("(\"'") in _ABBREVIATIONS:
            continue
        spans.append((start, m.end()))
        start = m.end()
    spans.append((start, len(text)))
    out = []
    for a, b in spans:
        piece = text[a:b]
        if not any(c.isalnum() for c in piece):
            continue
        lead = len(piece) - len(piece.lstrip())
        out.append((a + lead, a + len(piece.rstrip())))
    return out


@dataclass(frozen=True, slots=True)
class Turn:
    question: str
    answer: str
    evidence: frozenset[str]  # memory ids of the sentences overlapping the rationale
    kind: str  # one of KINDS


@dataclass(frozen=True, slots=True)
class Conversation:
    id: str
    sentences: tuple[str, ...]  # memory id "<conversation id>#<index>" per sentence
    texts: tuple[str, ...]
    turns: tuple[Turn, ...]


def kind_of(index: int, question: str) -> str:
    if index == 0:
        return KINDS[0]
    words = _WORD.findall(question.lower())
    if len(question.split()) <= ELLIPTIC_WORDS or BACK_REFERENCES.intersection(words):
        return KINDS[2]
    return KINDS[1]


def load(path: Path) -> list[Conversation]:
    out = []
    for item in json.loads(path.read_text(encoding="utf-8"))["data"]:
        story = item["story"]
        spans = split_sentences(story)
        ids = tuple(f"{item['id']}#{k}" for k in range(len(spans)))
        turns = []
        for i, (q, a) in enumerate(zip(item["questions"], item["answers"], strict=True)):
            lo, hi = int(a["span_start"]), int(a["span_end"])
            if lo < 0 or hi <= lo:
                continue
            rationale = story[lo:hi]
            lo += len(rationale) - len(rationale.lstrip())
            hi -= len(rationale) - len(rationale.rstrip())
            evidence = frozenset(ids[k] for k, (s, e) in enumerate(spans) if s < hi and lo < e)
            if evidence:
                turns.append(Turn(q["input_text"], a["input_text"], evidence,
                                  kind_of(i, q["input_text"])))
        out.append(Conversation(item["id"], ids, tuple(story[s:e] for s, e in spans),
                                tuple(turns)))
    return out


def store_dir(path: Path) -> Path:
    digest = hashlib.sha256(path.read_bytes() + SPLITTER_VERSION.encode()).hexdigest()[:12]
    return CACHE / f"coqa_store_{digest}"


def build_store(conversations: Sequence[Conversation], done: Path) -> Path:
    """The cached store of every sentence (imported through a ``serve`` process with the
    default config), its saved hnsw index, and ``ids.json``: the memory each sentence
    resolved to (the duplicate gate may map a sentence to an identical earlier one)."""
    if (done / "ready").exists():
        return done
    shutil.rmtree(done, ignore_errors=True)
    done.mkdir(parents=True)
    items = [store_pb2.ImportItem(memory=memory_pb2.Memory(
        id=mid, content=text, agent_id=AGENT, type=memory_pb2.MEMORY_TYPE_FACT,
        source="coqa")) for c in conversations for mid, text in zip(c.sentences, c.texts,
                                                                   strict=True)]
    resolved: dict[str, str] = {}
    rejected = 0
    start = time.perf_counter()
    with served(done, 600) as client:
        for ack in client.import_stream(items):
            first = ack.sequence * 100
            bad = {e.index for e in ack.errors}
            rejected += len(bad)
            kept = [items[first + i].memory.id for i in range(ack.committed + ack.deduplicated
                                                               + len(bad)) if i not in bad]
            resolved.update(zip(kept, ack.ids, strict=True))
    save_index(done)
    (done / "ids.json").write_text(json.dumps(resolved))
    (done / "ready").write_text("ok\n")
    print(f"stored {len(items)} sentences ({rejected} rejected, "
          f"{sum(k != v for k, v in resolved.items())} resolved to another sentence) in "
          f"{time.perf_counter() - start:.0f} s", flush=True)
    return done


@dataclass
class Tally:
    in_view: list[bool] = field(default_factory=list)
    own: list[bool] = field(default_factory=list)
    words: list[int] = field(default_factory=list)
    inject_ms: list[float] = field(default_factory=list)


def converse(client: Client, conv: Conversation, channel: str, resolve: dict[str, str],
             tallies: dict[str, Tally], prepend: int = 0) -> None:
    """One conversation through the agent loop; adds each turn to its kind's tally (an
    elliptical follow-up counts as a follow-up too)."""
    loop = AgentLoop(client, channel, AGENT, prepend)
    for turn in conv.turns:
        seen = loop.turn(turn.question, turn.answer)
        evidence = {resolve.get(e, e) for e in turn.evidence}
        kinds = [turn.kind] + (["follow-up"] if turn.kind == KINDS[2] else [])
        for kind in kinds:
            tally = tallies[kind]
            tally.in_view.append(bool(evidence & (seen.own | seen.held)))
            tally.own.append(bool(evidence & seen.own))
            tally.words.append(seen.words)
            tally.inject_ms.append(seen.inject_ms)


def replay(data_dir: Path, conversations: Sequence[Conversation],
           prepend: int = 0) -> dict[str, Tally]:
    resolve: dict[str, str] = json.loads((data_dir / "ids.json").read_text())
    tallies = {kind: Tally() for kind in KINDS}
    with served(data_dir) as client:
        for n, conv in enumerate(conversations):
            converse(client, conv, f"coqa-{n}", resolve, tallies, prepend)
    return tallies


HEADER = ("| label | turn kind | turns | evidence in view | in own block | words/turn "
          "| Inject p50 / p99 ms |\n|---|---|---|---|---|---|---|")


def rows(label: str, tallies: dict[str, Tally]) -> list[str]:
    out = []
    for kind in KINDS:
        t = tallies[kind]
        if not t.in_view:
            continue
        p50, p99 = np.percentile(t.inject_ms, [50, 99])
        out.append(f"| {label} | {kind} | {len(t.in_view)} | {np.mean(t.in_view):.3f} "
                   f"| {np.mean(t.own):.3f} | {np.mean(t.words):.1f} | {p50:.1f} / {p99:.1f} |")
    return out


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, required=True, help="CoQA json (coqa_dev.json)")
    parser.add_argument("--config", type=Path, default=None,
                        help="TOML merged into the sidecar's config file (e.g. "
                             "[defaults.memory_injection] keys)")
    parser.add_argument("--limit", type=int, default=0, help="first N conversations (0: all)")
    parser.add_argument("--label", default="", help="the results rows' label")
    parser.add_argument("--out", type=Path, default=RESULTS / "conversation_followups.md")
    parser.add_argument("--prepend-exchanges", type=int, default=0,
                        help="the client prepends this many earlier question/answer pairs to "
                             "Inject's text (the naive alternative; 0: the question alone)")
    args = parser.parse_args(argv)
    conversations = load(args.data)
    data_dir = build_store(conversations, store_dir(args.data))
    chosen = conversations[: args.limit] if args.limit else conversations
    toml = config_text(args.config, MAX_TOTAL)
    label = label_of(args.config, args.label, args.prepend_exchanges)
    start = time.perf_counter()
    with working_copy(data_dir, toml) as copy:
        tallies = replay(copy, chosen, args.prepend_exchanges)
    report(args.out, "conversation_followups", HEADER, rows(label, tallies), toml,
           f"{len(chosen)} conversations", start)


if __name__ == "__main__":
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    main()
