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
        [--shuffle SEED] [--chatter 0.3] [--pairs]

Scenarios: ``--shuffle SEED``: the store written in a random order (all sentences of all
stories shuffled; cached apart); ``--chatter P``: after a turn, with probability P (seeded),
a content-free turn ("ok thanks", "lol", ...; reply "You're welcome.") is asked: its
memories are counted ("content-free turn" rows) and the follow-up after it is its own kind;
``--pairs``: two conversations alternate turn by turn on one channel, as two people asking
in one channel (each turn's kind as usual); ``--speakers`` names each turn's speaker
(``InjectRequest.user_id``).

The sidecar runs as a ``memsidecar serve`` process with ``[defaults.memory_injection]
max_total = 5`` and the ``--config`` file merged over it (its keys win).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import re
import shutil
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from memsidecar.v1 import memory_pb2, store_pb2
from memsidecar_client import Client

from bench.agent_loop_replay import (
    AgentLoop,
    Seen,
    config_text,
    label_of,
    own_hit_retention,
    report,
    retention_line,
    save_index,
    served,
)
from bench.lme import CACHE
from bench.replay_longmemeval import working_copy
from bench.results import RESULTS
from sidecar.injection.config import MemoryInjectionConfig

AGENT = "coqa"
MAX_TOTAL = 5  # items per block in the default run
# The own hits the defaults guarantee a turn (the search's top hits): their retention is
# reported apart.
GUARANTEED = MemoryInjectionConfig().query_context_own_hits
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
KINDS = ("first turn", "follow-up", "elliptical follow-up", "follow-up after chatter",
         "content-free turn")
CHATTER = ("ok thanks", "lol", "cool", "I see.", "\N{THUMBS UP SIGN}", "ok", "great, thanks",
           "haha")
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


def store_dir(path: Path, shuffle: int = 0) -> Path:
    digest = hashlib.sha256(path.read_bytes() + SPLITTER_VERSION.encode()).hexdigest()[:12]
    return CACHE / (f"coqa_store_{digest}" + (f"_shuffled{shuffle}" if shuffle else ""))


def build_store(conversations: Sequence[Conversation], done: Path, shuffle: int = 0) -> Path:
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
    if shuffle:  # every story's sentences written in a random order among all the others
        random.Random(shuffle).shuffle(items)
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
    items: list[int] = field(default_factory=list)  # content-free turns: memories injected


@dataclass
class Scenario:
    """What a replay adds to its conversations: content-free turns (``chatter``: their
    probability after a turn) and the own-hit check (``retained``, None: off: per turn, the
    memories the text alone injects on a fresh channel and how many of them the turn has in
    its block or in view, then the same of the first ``GUARANTEED`` of them, the search's
    top hits)."""

    chatter: float = 0.0
    rng: random.Random = field(default_factory=lambda: random.Random(39))
    retained: list[tuple[int, int, int, int, int]] | None = None


def converse(client: Client, conv: Conversation, channel: str, resolve: dict[str, str],
             tallies: dict[str, Tally], prepend: int = 0,
             scenario: Scenario | None = None) -> None:
    """One conversation through the agent loop; adds each turn to its kind's tally (an
    elliptical follow-up counts as a follow-up too)."""
    interleave(client, [(AgentLoop(client, channel, AGENT, prepend), conv)], resolve, tallies,
               scenario or Scenario())


def interleave(client: Client, talks: Sequence[tuple[AgentLoop, Conversation]],
               resolve: dict[str, str], tallies: dict[str, Tally], scenario: Scenario) -> None:
    """The conversations' turns, one of each in turn, each through its loop (loops may share
    a channel), with the ``scenario``'s content-free turns and own-hit check."""
    after = [False] * len(talks)
    retained, rng = scenario.retained, scenario.rng
    for step in range(max(len(c.turns) for _, c in talks)):
        for k, (loop, conv) in enumerate(talks):
            if step >= len(conv.turns):
                continue
            turn = conv.turns[step]
            alone: list[str] = []
            if retained is not None:  # what the text alone injects: a fresh channel's first turn
                alone = [i.id for i in client.inject(
                    turn.question, channel_id=f"alone-{len(retained)}", agent_id=AGENT,
                    source="user").items]  # in the search's ranking
            seen = loop.turn(turn.question, turn.answer)
            if retained is not None:
                retained.append(own_hit_retention(client, loop, seen, alone, GUARANTEED))
            evidence = {resolve.get(e, e) for e in turn.evidence}
            kinds = [turn.kind] + (["follow-up"] if turn.kind == KINDS[2] else [])
            if after[k] and turn.kind != KINDS[0]:
                kinds.append(KINDS[3])
            for kind in kinds:
                add(tallies[kind], bool(evidence & (seen.own | seen.held)),
                    bool(evidence & seen.own), seen)
            after[k] = bool(scenario.chatter and rng.random() < scenario.chatter)
            if after[k]:
                quiet = loop.turn(rng.choice(CHATTER), "You're welcome.")
                add(tallies[KINDS[4]], False, False, quiet, items=len(quiet.own))


def add(tally: Tally, in_view: bool, own: bool, seen: Seen, items: int = -1) -> None:
    tally.in_view.append(in_view)
    tally.own.append(own)
    tally.words.append(seen.words)
    tally.inject_ms.append(seen.inject_ms)
    if items >= 0:
        tally.items.append(items)


def replay(data_dir: Path, conversations: Sequence[Conversation], prepend: int = 0,
           scenario: Scenario | None = None, pairs: bool = False, speakers: bool = False,
           ) -> dict[str, Tally]:
    resolve: dict[str, str] = json.loads((data_dir / "ids.json").read_text())
    tallies = {kind: Tally() for kind in KINDS}
    scenario = scenario or Scenario()
    with served(data_dir) as client:
        if pairs:
            for n in range(0, len(conversations) - 1, 2):
                talks = [(speaking(client, f"coqa-{n}", f"user-{k}", speakers),
                          conversations[n + k])
                         for k in range(2)]
                interleave(client, talks, resolve, tallies, scenario)
            return tallies
        for n, conv in enumerate(conversations):
            converse(client, conv, f"coqa-{n}", resolve, tallies, prepend, scenario)
    return tallies


class Speaking(AgentLoop):
    """One person of a channel: the channel's loop (``room``: its history and blocks, shared
    by the people in it), with Inject naming the speaker (``user_id``) when ``named``."""

    def __init__(self, room: AgentLoop, speaker: str, named: bool) -> None:
        self.room, self.speaker, self.named = room, speaker, named
        self.channel, self.agent = room.channel, room.agent

    def turn(self, question: str, answer: str,
             inject: Callable[[str], tuple[str, Sequence[str]]] | None = None) -> Seen:
        return self.room.turn(question, answer, inject or self.inject)

    def inject(self, text: str) -> tuple[str, list[str]]:
        if not self.named:
            return self.room.inject(text)
        reply = self.room.client.inject(text, channel_id=self.room.channel, agent_id=AGENT,
                                        source="user", user_id=self.speaker)
        return reply.block, [item.id for item in reply.items]


ROOMS: dict[str, AgentLoop] = {}


def speaking(client: Client, channel: str, speaker: str, named: bool) -> Speaking:
    """``speaker`` in ``channel`` (one history per channel)."""
    room = ROOMS.setdefault(channel, AgentLoop(client, channel, AGENT))
    return Speaking(room, speaker, named)


HEADER = ("| label | turn kind | turns | evidence in view (content-free: memories/turn) "
          "| in own block | words/turn | Inject p50 / p99 ms |\n|---|---|---|---|---|---|---|")


def rows(label: str, tallies: dict[str, Tally]) -> list[str]:
    out = []
    for kind in KINDS:
        t = tallies[kind]
        if not t.in_view:
            continue
        p50, p99 = np.percentile(t.inject_ms, [50, 99])
        share = np.mean(t.items) if kind == KINDS[4] else np.mean(t.in_view)
        out.append(f"| {label} | {kind} | {len(t.in_view)} | {share:.3f} "
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
    parser.add_argument("--shuffle", type=int, default=0,
                        help="the store written in a random order with this seed (0: in order)")
    parser.add_argument("--chatter", type=float, default=0.0,
                        help="probability of a content-free turn after each turn")
    parser.add_argument("--pairs", action="store_true",
                        help="two conversations alternate on one channel")
    parser.add_argument("--own-check", action="store_true",
                        help="also ask each question on a fresh channel (the text alone) and "
                             "count how much of that block is in the turn's block or in view")
    parser.add_argument("--speakers", action="store_true",
                        help="with --pairs: each turn names its speaker (user_id)")
    parser.add_argument("--prepend-exchanges", type=int, default=0,
                        help="the client prepends this many earlier question/answer pairs to "
                             "Inject's text (the naive alternative; 0: the question alone)")
    args = parser.parse_args(argv)
    conversations = load(args.data)
    data_dir = build_store(conversations, store_dir(args.data, args.shuffle), args.shuffle)
    chosen = conversations[: args.limit] if args.limit else conversations
    toml = config_text(args.config, MAX_TOTAL)
    label = label_of(args.config, args.label, args.prepend_exchanges)
    start = time.perf_counter()
    scenario = Scenario(args.chatter, retained=[] if args.own_check else None)
    with working_copy(data_dir, toml) as copy:
        tallies = replay(copy, chosen, args.prepend_exchanges, scenario, args.pairs,
                         args.speakers)
    report(args.out, "conversation_followups", HEADER, rows(label, tallies), toml,
           f"{len(chosen)} conversations", start)
    if scenario.retained:
        print(retention_line(scenario.retained, GUARANTEED))


if __name__ == "__main__":
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    main()
