"""Relevance floors on the LongMemEval replay, per conversation turn, as one agent.

    .venv/bin/python -m bench.floor_replay [--size 100000] [--growing] [--rules "a;b"]
        [--channel-diversity 0.05]

The store holds every user turn of every session of the oracle set (5,432 memories of 940
sessions; ``--size`` pads it with filler from bench/padding.py: sentences of the oracle
conversations and pairs of them, each labelled with the sessions it comes from). Each of the
500 questions is one conversation, replayed as one channel: every user turn of its sessions
in date order, then the question (5,979 turns). A turn searches the whole store except its
own memory (``--growing``: except the question's current and later sessions, i.e. only what
was said before the session). Hits come from the real hybrid engine (default
RetrievalConfig but ``--channel-diversity``, in process, ``search_limit`` 20); a
conversation turn's query embedding is its stored one. The searches are cached per store
size, ``--growing`` and retrieval config (every knob), so a changed knob searches again.

Per floor rule the blocks are then built as Inject builds them: the floor, the cooldown of
the K - 1 = 2 latest non-empty blocks (by id, and by cosine > ``semantic_threshold`` to them
or to an item kept earlier in the block), ``max_total``. Reported per turn:

- items, and **unrelated** items: memories of sessions that are not the question's own
  (another conversation, or filler made only from other conversations' sentences);
- at the question turn, **evidence in view**: the share of the question's ``has_answer``
  user turns the model has in view (the question's block or the blocks still held).

Each row of the store carries the channel it was written in (its ``channel_id``, which the
search's ``channel_diversity`` spreads over): the conversation of its session (the first one
holding it, for the 8 sessions two questions share); filler carries none. A conversation's
turns are Injects of its channel. "Question alone" is the question against the whole store
with no conversation before it, in a channel where nothing was written (one turn per
question); "asked elsewhere" is the same question in the channel of the
other conversation most of its hits come from (what a user asking about one conversation
from within another gets). The same rules are also reported as if no memory carried a
channel.

The channel-blind floors (their ranking is in docs/decisions/0011-relevance-floor.md) stay
reachable with ``--rules``; the channel rules are ranked on a fixed tune half of the
questions (among those cutting at least 40% of the unrelated items the absolute floor lets
through for at most 0.02 of both evidence figures, the least evidence lost asked elsewhere)
and reported on the other half.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
sys.path.insert(0, str(Path(__file__).parent))

import numpy as np  # noqa: E402
from lme_data import CACHE, cached_embeddings, load_oracle, pooled_turns  # noqa: E402
from results import recorded  # noqa: E402
from store_build import build_store  # noqa: E402

from sidecar.embedding import Embedder, bundled_model_files  # noqa: E402
from sidecar.injection.config import MemoryInjectionConfig  # noqa: E402
from sidecar.injection.floor import Floor, passes  # noqa: E402
from sidecar.live import Live  # noqa: E402
from sidecar.retrieval.background import SimilarityBackground, uniform  # noqa: E402
from sidecar.retrieval.config import RetrievalConfig  # noqa: E402
from sidecar.retrieval.contract import SearchQuery  # noqa: E402
from sidecar.retrieval.hybrid import HybridRetriever  # noqa: E402
from sidecar.store.db import Database  # noqa: E402
from sidecar.store.repos import Repositories  # noqa: E402

SEED = 20261122
CONFIG = MemoryInjectionConfig()


@dataclass(frozen=True, slots=True)
class Turn:
    idx: np.ndarray  # store rows of the hits, fused-score order
    cosine: np.ndarray
    score: np.ndarray
    query: np.ndarray  # the query embedding


@dataclass(frozen=True, slots=True)
class Conversation:
    turns: list[Turn]  # the conversation's user turns, then the question
    own: frozenset[str]  # the question's sessions
    evidence: frozenset[int]  # store rows of its has_answer user turns (empty: abstention)
    alone: Turn  # the question against the whole store
    channel: int = -1  # its channel: the question's index


@dataclass(frozen=True, slots=True)
class Store:
    ids: list[str]
    texts: list[str]
    vectors: np.ndarray
    sessions: list[frozenset[str]]  # the sessions each row comes from
    channels: np.ndarray  # the channel each row was written in (-1: none, filler)


def oracle_store(data: list[dict], size: int) -> Store:  # type: ignore[type-arg]
    turns = pooled_turns(data, ("user",))
    ids = [t.id for t in turns]
    texts = [t.content for t in turns]
    vectors = cached_embeddings(texts, "lme_user")
    sessions = [frozenset([t.session_id]) for t in turns]
    channel_of: dict[str, int] = {}
    for n, q in enumerate(data):
        for sid in q["haystack_session_ids"]:
            channel_of.setdefault(sid, n)
    channels = [channel_of[t.session_id] for t in turns]
    if size > len(ids):
        fill_texts, fill_vectors, fill_sessions = filler(data, size - len(ids))
        ids += [f"fill-{i}" for i in range(len(fill_texts))]
        texts += fill_texts
        vectors = np.vstack([vectors, fill_vectors])
        sessions += fill_sessions
        channels += [-1] * len(fill_texts)
    return Store(ids, texts, vectors, sessions, np.array(channels, np.int64))


def filler(data: list[dict], n: int) -> tuple[list[str], np.ndarray,  # type: ignore[type-arg]
                                              list[frozenset[str]]]:
    """``n`` filler memories (bench/padding.py), each with the sessions its sentences are from."""
    from bench.padding import _SPLIT, padding, real

    texts, vectors = real(data[250:], Embedder(bundled_model_files()))
    origin: dict[str, set[str]] = {}
    for q in data:
        for sid, session in zip(q["haystack_session_ids"], q["haystack_sessions"], strict=True):
            for turn in session:
                for piece in _SPLIT.split(turn["content"]):
                    origin.setdefault(piece.strip(), set()).add(sid)
    out_texts, out_vectors = padding(texts, vectors, n)
    sessions = []
    for text in out_texts:
        parts = [text] if text in origin else _pair(text, origin)
        sessions.append(frozenset().union(*(origin.get(p, set()) for p in parts)))
    return out_texts, out_vectors, sessions


def _pair(text: str, origin: dict[str, set[str]]) -> list[str]:
    for cut in (i for i, ch in enumerate(text) if ch == " "):
        if text[:cut] in origin and text[cut + 1:] in origin:
            return [text[:cut], text[cut + 1:]]
    return []


def collect(size: int, growing: bool, retrieval: RetrievalConfig
            ) -> tuple[Store, list[Conversation]]:
    data = load_oracle()
    store = oracle_store(data, size)
    cache = CACHE / (f"floor_replay_{len(store.ids)}{'_growing' if growing else ''}"
                     f"_{searches_key(retrieval)}.json")
    row_of = {memory_id: i for i, memory_id in enumerate(store.ids)}
    if cache.exists():
        return store, [replace(_load(c), channel=n)
                       for n, c in enumerate(json.loads(cache.read_text()))]
    data_dir = CACHE / f"floor_replay_store_{len(store.ids)}_channels"
    build_store(data_dir, store.ids, store.texts, store.vectors,
                channels=[f"lme-{c}" if c >= 0 else "" for c in store.channels.tolist()])
    db = Database(data_dir / "memsidecar.sqlite3")
    engine = HybridRetriever(Embedder(bundled_model_files()), Live.fixed(retrieval))
    repos = Repositories.open(db)
    engine.load(repos.memories, repos.edges)
    by_session: dict[str, list[int]] = {}
    for i, sessions in enumerate(store.sessions):
        for sid in sessions:
            by_session.setdefault(sid, []).append(i)
    seq = np.array([engine.live.seq_of(m) for m in store.ids], np.int64)
    searcher = _Searcher(engine, seq, row_of)
    out = []
    for n, q in enumerate(data):
        out.append(_conversation(q, store, row_of, by_session, searcher, growing))
        if n % 25 == 0:
            print(f"searched {n}/{len(data)} conversations", file=sys.stderr, flush=True)
    db.close()
    cache.write_text(json.dumps([_dump(c) for c in out]))
    return store, [replace(c, channel=n) for n, c in enumerate(out)]


def searches_key(retrieval: RetrievalConfig) -> str:
    """What the cached searches depend on: every retrieval knob, and that the store's rows
    carry their channels."""
    knobs = json.dumps({"retrieval": asdict(retrieval), "channels": True}, sort_keys=True,
                       default=str)
    return hashlib.sha256(knobs.encode()).hexdigest()[:12]


class _Searcher:
    """The engine's search, blind to some store rows (sessions not stored yet)."""

    def __init__(self, engine: HybridRetriever, seq: np.ndarray, row_of: dict[str, int]) -> None:
        self.engine, self.seq, self.row_of = engine, seq, row_of
        self.hidden = np.zeros(int(seq.max()) + 1, bool)
        live = engine.live
        original = live.filter

        def accept(agent_id: str, types: object = ()) -> object:
            base = original(agent_id)
            hidden = self.hidden
            return lambda labels: base(labels) & ~hidden[np.clip(labels, 0, len(hidden) - 1)]

        live.accept = accept  # type: ignore[method-assign,assignment]

    def search(self, text: str, vector: np.ndarray, hidden_rows: list[int]) -> Turn:
        self.hidden[:] = False
        self.hidden[self.seq[hidden_rows]] = True
        hits = self.engine.search(SearchQuery(text, limit=CONFIG.search_limit, embedding=vector,
                                              search_limit=CONFIG.search_limit)).hits
        return Turn(np.array([self.row_of[h.memory.id] for h in hits], np.int64),
                    np.array([h.cosine for h in hits]), np.array([h.score for h in hits]),
                    vector)


def _conversation(q: dict, store: Store, row_of: dict[str, int],  # type: ignore[type-arg]
                  by_session: dict[str, list[int]], searcher: _Searcher,
                  growing: bool) -> Conversation:
    own = frozenset(q["haystack_session_ids"])
    order = sorted(range(len(q["haystack_session_ids"])), key=lambda i: q["haystack_dates"][i])
    sids = [q["haystack_session_ids"][i] for i in order]
    turns = []
    for k, i in enumerate(order):
        later = [r for sid in sids[k:] for r in by_session.get(sid, [])] if growing else []
        for j, message in enumerate(q["haystack_sessions"][i]):
            if message["role"] != "user" or not message["content"].strip():
                continue
            row = row_of[f"{sids[k]}#{j}"]
            turns.append(searcher.search(message["content"], store.vectors[row], later or [row]))
    turns.append(searcher.search(q["question"], searcher.engine.embed_query(q["question"]), []))
    evidence: frozenset[int] = frozenset()
    if not str(q["question_id"]).endswith("_abs"):
        evidence = frozenset(
            row_of[f"{sid}#{j}"]
            for sid, session in zip(q["haystack_session_ids"], q["haystack_sessions"], strict=True)
            if sid in q["answer_session_ids"]
            for j, m in enumerate(session)
            if m["role"] == "user" and m.get("has_answer") and m["content"].strip())
    return Conversation(turns, own, evidence, turns[-1])


def _dump(c: Conversation) -> dict:  # type: ignore[type-arg]
    return {"turns": [[t.idx.tolist(), t.cosine.tolist(), t.score.tolist(),
                       np.round(t.query, 5).tolist()] for t in c.turns],
            "own": sorted(c.own), "evidence": sorted(c.evidence)}


def _load(d: dict) -> Conversation:  # type: ignore[type-arg]
    turns = [Turn(np.array(i, np.int64), np.array(c), np.array(s), np.array(q, np.float32))
             for i, c, s, q in d["turns"]]
    return Conversation(turns, frozenset(d["own"]), frozenset(d["evidence"]), turns[-1])


# --- rules and the block simulation --------------------------------------------------------

# keep mask over the turn's hits, given which hits were written in the turn's channel
Rule = Callable[[Turn, np.ndarray], np.ndarray]
Blind = Callable[[Turn], np.ndarray]  # a rule that ignores channels


@dataclass(frozen=True, slots=True)
class Row:
    items: float
    unrelated: float
    recall: float  # at the question turn, in view
    q_items: float  # the question alone
    q_unrelated: float
    q_recall: float
    x_recall: float  # the question asked in the channel of the conversation it looks most like


def measure(store: Store, convs: list[Conversation], rule: Rule, channels: bool = True) -> Row:
    """``channels`` False: as if no memory carried a channel. The question alone is asked in
    a channel of its own, where nothing was written."""
    items, unrelated, recall = [], [], []
    q_items, q_unrelated, q_recall, x_recall = [], [], [], []
    for c in convs:
        blocks: list[list[int]] = []
        for n, t in enumerate(c.turns):
            held = blocks[-(CONFIG.max_injected_blocks_in_history - 1):]
            own = store.channels[t.idx] == (c.channel if channels else -2)
            chosen = _block(store, t, rule(t, own), [r for b in held for r in b])
            items.append(len(chosen))
            unrelated.append(_unrelated(store, c, chosen))
            if n == len(c.turns) - 1 and c.evidence:
                seen = set(chosen).union(*held)
                recall.append(len(seen & c.evidence) / len(c.evidence))
            if chosen:
                blocks.append(chosen)
        alone = _block(store, c.alone, rule(c.alone, np.zeros(len(c.alone.idx), bool)), [])
        q_items.append(len(alone))
        q_unrelated.append(_unrelated(store, c, alone))
        if c.evidence:
            q_recall.append(len(set(alone) & c.evidence) / len(c.evidence))
            there = _nearest_other(store, c) if channels else np.zeros(len(c.alone.idx), bool)
            elsewhere = _block(store, c.alone, rule(c.alone, there), [])
            x_recall.append(len(set(elsewhere) & c.evidence) / len(c.evidence))
    return Row(*(float(np.mean(v)) for v in (items, unrelated, recall, q_items, q_unrelated,
                                             q_recall, x_recall)))


def _nearest_other(store: Store, c: Conversation) -> np.ndarray:
    """Which of the question's hits were written in the other conversation most of them come
    from: the question asked there."""
    channels = store.channels[c.alone.idx]
    others = channels[(channels != c.channel) & (channels >= 0)]
    if not len(others):
        return np.zeros(len(channels), bool)
    return channels == np.bincount(others).argmax()


def _unrelated(store: Store, c: Conversation, rows: list[int]) -> int:
    return sum(not (store.sessions[r] & c.own) for r in rows)


def _block(store: Store, t: Turn, keep: np.ndarray, in_view: list[int]) -> list[int]:
    if not len(t.idx):
        return []
    keep = keep & (t.cosine >= CONFIG.contextual_min_score)
    view = set(in_view)
    view_vecs = store.vectors[in_view] if in_view else None
    chosen: list[int] = []
    for r in t.idx[keep].tolist():
        if r in view or r in chosen:
            continue
        v = store.vectors[r]
        if view_vecs is not None and float((view_vecs @ v).max()) > CONFIG.semantic_threshold:
            continue
        if chosen and float((store.vectors[chosen] @ v).max()) > CONFIG.semantic_threshold:
            continue
        chosen.append(r)
        if len(chosen) == CONFIG.max_total:
            break
    return chosen


def relative(r: float, s: float, both: bool = False) -> Blind:
    """cosine >= r x best OR (AND with ``both``) fused score >= s x best; 0 = that part off."""
    def rule(t: Turn) -> np.ndarray:
        by_cos = t.cosine >= r * t.cosine.max() if r else None
        by_score = t.score >= s * t.score.max() if s else None
        parts = [p for p in (by_cos, by_score) if p is not None]
        if not parts:
            return np.ones(len(t.idx), bool)
        if len(parts) == 1:
            return parts[0]
        return (parts[0] & parts[1]) if both else (parts[0] | parts[1])
    return rule


def spread(f: float) -> Blind:
    """cosine >= tail + f x (best - tail), tail = the turn's lowest hit cosine."""
    def rule(t: Turn) -> np.ndarray:
        lo, hi = t.cosine.min(), t.cosine.max()
        return t.cosine >= lo + f * (hi - lo)
    return rule


def gap(g: float, start: int = 1) -> Blind:
    """Cut below the largest drop between consecutive sorted cosines (after ``start`` hits)
    when that drop is at least ``g``."""
    def rule(t: Turn) -> np.ndarray:
        s = np.sort(t.cosine)[::-1]
        if len(s) <= start:
            return np.ones(len(t.idx), bool)
        d = s[start - 1:-1] - s[start:]
        i = int(np.argmax(d))
        if d[i] < g:
            return np.ones(len(t.idx), bool)
        return t.cosine >= s[start - 1 + i]
    return rule


def background(vectors: np.ndarray) -> SimilarityBackground:
    """The engine's background estimate over the whole store."""
    return SimilarityBackground(
        lambda n: (vectors[uniform(np.arange(len(vectors)), n)], len(vectors)))


def zscore(bg: SimilarityBackground, z: float) -> Blind:
    """cosine >= background mean + z x background spread."""
    def rule(t: Turn) -> np.ndarray:
        m, sd, _ = bg.of(t.query)
        return t.cosine >= m + z * sd
    return rule


def above_background(bg: SimilarityBackground, f: float) -> Blind:
    """cosine - background >= f x (best - background)."""
    def rule(t: Turn) -> np.ndarray:
        m, _, _ = bg.of(t.query)
        return t.cosine - m >= f * (t.cosine.max() - m)
    return rule


def either(a: Blind, b: Blind) -> Blind:
    return lambda t: a(t) | b(t)


def both(a: Blind, b: Blind) -> Blind:
    return lambda t: a(t) & b(t)


def blind(rule: Blind) -> Rule:
    return lambda t, _own: rule(t)


def configured(bg: SimilarityBackground, config: MemoryInjectionConfig) -> Rule:
    """The floor Inject runs (``sidecar.injection.floor``) with ``config``'s knobs."""
    floor = Floor(config.contextual_min_score, config.relative_floor, config.score_floor,
                  config.background_floor, config.own_channel_boost)

    def rule(t: Turn, own: np.ndarray) -> np.ndarray:
        hits = [_Hit(c, s) for c, s in zip(t.cosine.tolist(), t.score.tolist(), strict=True)]
        return np.array(passes(hits, floor, bg.of(t.query), own.tolist()), bool)
    return rule


def other_channel(base: Rule, x: float, always: bool = False) -> Rule:
    """``base``, and a hit of another channel needs a fused score >= x x the best when one of
    the turn's channel passes ``base`` (``always``: whether or not one does)."""
    def rule(t: Turn, own: np.ndarray) -> np.ndarray:
        keep = base(t, own)
        if not always and not (keep & own).any():
            return keep
        return keep & (own | (t.score >= x * t.score.max()))
    return rule


@dataclass(frozen=True, slots=True)
class _Hit:
    cosine: float
    score: float


OLD = MemoryInjectionConfig(score_floor=0.3, background_floor=0.0, own_channel_boost=0.0)
UNBOOSTED = MemoryInjectionConfig(score_floor=0.4, background_floor=2.0, own_channel_boost=0.0)


def grid(bg: SimilarityBackground) -> dict[str, Rule]:
    rules = {name: blind(rule) for name, rule in blind_grid(bg).items()}
    rules["score_floor 0.3"] = configured(bg, OLD)
    rules["defaults"] = configured(bg, CONFIG)
    unboosted = configured(bg, UNBOOSTED)
    rules["own_channel_boost 0"] = unboosted
    for x in (0.5, 0.55, 0.6, 0.65, 0.7, 0.8):
        rules[f"other channel {x}"] = other_channel(unboosted, x)
    for x in (0.5, 0.7):
        rules[f"other channel {x} always"] = other_channel(unboosted, x, always=True)
    for b in (0.25, 0.5, 0.6, 0.7, 0.75, 0.8, 0.9, 1.0, 1.5, 2.0):
        rules[f"own_channel_boost {b}"] = configured(bg, replace(UNBOOSTED, own_channel_boost=b))
        rules[f"score_floor 0.3, own_channel_boost {b}"] = configured(
            bg, replace(OLD, own_channel_boost=b))
    return rules


def blind_grid(bg: SimilarityBackground) -> dict[str, Blind]:
    """The channel-blind rules: absolute, background, relative, spread and gap floors."""
    rules: dict[str, Blind] = {"absolute only": relative(0, 0)}
    for z in (1.5, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5.0, 5.5, 6.0, 7.0):
        rules[f"z {z}"] = zscore(bg, z)
        for s in (0.3, 0.35, 0.4, 0.5, 0.6):
            rules[f"z {z} OR score {s}"] = either(zscore(bg, z), relative(0, s))
            rules[f"z {z} AND score {s}"] = both(zscore(bg, z), relative(0, s))
    for f in (0.3, 0.4, 0.5, 0.6, 0.7):
        rules[f"background {f}"] = above_background(bg, f)
        rules[f"background {f} OR score 0.3"] = either(above_background(bg, f), relative(0, 0.3))
    for r in (0.0, 0.5, 0.6, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95):
        for s in (0.0, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7, 0.8):
            if r or s:
                rules[f"cos {r} OR score {s}"] = relative(r, s)
                if r and s:
                    rules[f"cos {r} AND score {s}"] = relative(r, s, True)
    for f in (0.2, 0.3, 0.4, 0.5, 0.6):
        rules[f"spread {f}"] = spread(f)
        for s in (0.3, 0.5):
            rules[f"spread {f} OR score {s}"] = either(spread(f), relative(0, s))
    for g in (0.03, 0.05, 0.08):
        rules[f"gap {g}"] = gap(g)
    return rules


def split(n: int) -> tuple[list[int], list[int]]:
    order = np.random.default_rng(SEED).permutation(n)
    tune = sorted(int(i) for i in order[: n // 2])
    return tune, sorted(set(range(n)) - set(tune))


def fmt(name: str, row: Row) -> str:
    return (f"| {name} | {row.items:.2f} | {row.unrelated:.2f} | {row.recall:.3f} | "
            f"{row.q_items:.2f} | {row.q_unrelated:.2f} | {row.q_recall:.3f} | "
            f"{row.x_recall:.3f} |")


HEADER = ("| rule | items / turn | unrelated / turn | evidence in view | question alone: items "
          "| unrelated | evidence | evidence asked elsewhere |\n|---|---|---|---|---|---|---|---|")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--size", type=int, default=0, help="pad the store to this many rows")
    parser.add_argument("--growing", action="store_true",
                        help="a turn sees only sessions before its own (not the whole store)")
    parser.add_argument("--rules", default="",
                        help="only these rules (names separated by ;), on both halves")
    parser.add_argument("--channel-diversity", type=float, default=None,
                        help="[retrieval] channel_diversity of the searches (default: its "
                             "default)")
    args = parser.parse_args()
    retrieval = RetrievalConfig()
    if args.channel_diversity is not None:
        retrieval = replace(retrieval, channel_diversity=args.channel_diversity)
    name = f"floor_replay_{args.size or 5432}{'_growing' if args.growing else ''}"
    if args.channel_diversity is not None:
        name += f"_diversity_{args.channel_diversity:g}"
    with recorded(name + ("_rules" if args.rules else "")):
        report(args.size, args.growing, args.rules, retrieval)


def report(size: int, growing: bool, only: str, retrieval: RetrievalConfig) -> None:
    store, convs = collect(size, growing, retrieval)
    tune_idx, held_idx = split(len(convs))
    tune = [convs[i] for i in tune_idx]
    held = [convs[i] for i in held_idx]
    rules = grid(background(store.vectors))
    if only:
        names = ["absolute only", *only.split(";")]
        for title, part in (("tune half", tune), ("held-out half", held)):
            print(f"\n{title}, {len(store.ids)} memories:\n\n{HEADER}")
            for name in names:
                print(fmt(name, measure(store, part, rules[name])))
        no_channels(store, held, rules, names)
        return
    base = measure(store, tune, rules["absolute only"])
    # The channel-blind grid was ranked before (docs/decisions/0011): only references here.
    ranked_names = [n for n in rules if "channel" in n or n in REFERENCES]
    rows = {name: measure(store, tune, rules[name]) for name in ranked_names}

    def lost(row: Row) -> float:
        return max(base.recall - row.recall, base.q_recall - row.q_recall)

    def meets(row: Row) -> bool:
        return lost(row) <= 0.02 and row.unrelated <= (1 - TARGET_CUT) * base.unrelated

    ranked = sorted(rows, key=lambda n: (not meets(rows[n]), -rows[n].x_recall,
                                         rows[n].unrelated))
    print(f"{len(store.ids)} memories, {len(convs)} conversations, "
          f"{sum(len(c.turns) for c in convs)} turns\n\ntune half: absolute only, then the "
          f"rules that cut at least {TARGET_CUT:.0%} of its unrelated items for at most 0.02 "
          "of evidence (in view and question alone), the least evidence lost when the question "
          "is asked in another conversation's channel first, then the others:\n")
    print(HEADER)
    for name in ["absolute only", *(n for n in ranked if n != "absolute only")]:
        print(fmt(name, rows[name]))
    print("\nheld-out half:\n")
    print(HEADER)
    names = list(dict.fromkeys((*REFERENCES, *ranked[:5])))
    for name in names:
        print(fmt(name, measure(store, held, rules[name])))
    no_channels(store, held, rules, names)


REFERENCES = ("absolute only", "score_floor 0.3", "own_channel_boost 0", "defaults")
TARGET_CUT = 0.4  # of the unrelated items the absolute floor alone lets through


def no_channels(store: Store, held: list[Conversation], rules: dict[str, Rule],
                names: list[str]) -> None:
    print(f"\nheld-out half, no memory carries a channel:\n\n{HEADER}")
    for name in names:
        print(fmt(name, measure(store, held, rules[name], channels=False)))


if __name__ == "__main__":
    main()
