"""Conversation focus: a follow-up also gets the memories written next to what the
conversation has been drawing on.

Memories written one after another by the same writer (same owner, source and channel: a
``Place``, counted in that writer's own sequence) are often parts of one whole: the sentences
of a document read into memory, the turns of one session. A conversation about that whole
asks follow-ups ("what did he do next?", "why?") whose answer sits next to what earlier turns
used, sharing few words with the question.

Each turn of a channel votes for memories: its search's first ``HIT_VOTES`` hits (the first
``HIT_VOTE``, the next ones less) and, once a PruneHistory shows the assistant's reply, the
memory the reply drew on (``REPLY_VOTE``): of the memories in view holding enough of the
reply's terms (``drawn_on``, counted from the BM25 index: no text is analysed again), the one
the turn's text and its reply match best by BM25 (the reply's words count twice); when none
in view does, the best such among the ``WIDE`` memories of the store that BM25 ranks first
for their rarest terms, read while their postings add up to at most ``WIDE_POSTINGS`` (work
that does not grow with the store). A content-free turn votes for nothing.
Votes fade by ``DECAY`` a turn. A voted memory weighs the votes within ``CLUSTER`` places of
it; the ``ANCHORS`` heaviest are the focus, and the memories within
``query_context_focus_radius`` places of them are its neighbourhood. The PruneHistory that
brings a reply asks for the next turn's anchors and their neighbourhood (``around``): when
hardly any memory written next to the anchors reads like one of them (the order says little:
a shuffled import, many writers interleaved), the memories the search finds for the anchors
themselves (``kin``) join the neighbourhood. The next
Inject has them worked out on the conversation's worker thread beside its embedding
(``room.Conversation.around``).

A turn that leans on its context (``query_context.gate`` > 0) is offered the
``query_context_focus`` best memories of that neighbourhood not in view with a cosine to the
(steered) query of at least ``contextual_min_score`` (for a turn of at most two terms of its
own, ``LOW_SHARE`` x it for one that reads like an anchor other than itself, cosine to it at
least ``query_context_focus_cohesion``: the parts of one document do, facts written one after
another on unrelated subjects don't), ranked by that cosine plus ``TERMS_SHARE`` x the BM25
score the search gave them for the turn's and its context's terms (relative to the
neighbourhood's best). The offers only add to what the turn's own search injects
(``sidecar.conversation.room``). docs/decisions/0017, 0018 and 0019 have the measurements.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Container, Sequence
from dataclasses import dataclass, field

import numpy as np

from sidecar.conversation.query_context import QueryContext, RecentTurn, gate
from sidecar.injection.config import MemoryInjectionConfig
from sidecar.injection.types import Candidate, Section
from sidecar.records import Memory, Viewer
from sidecar.retrieval.contract import Retriever, SearchQuery, cosine_of

# Votes: a turn's first search hits and the memory its reply drew on.
HIT_VOTES, HIT_VOTE, REPLY_VOTE = 5, 0.5, 1.0
WIDE = 20  # memories of the store a reply's vote looks at when none in view holds its words
# Postings (memories holding one of its terms, the rarest terms first) that search reads at
# most: its work does not grow with the store (docs/decisions/0023 has the measurement).
WIDE_POSTINGS = 8192
# A reply draws on a memory holding at least min(REPLY_TERMS, REPLY_SHARE x its terms) of
# its distinct terms ("Drake": the one; a paragraph from the model's own knowledge: three).
REPLY_TERMS, REPLY_SHARE = 3, 0.5
DECAY = 0.85  # a vote's weight one turn later
CLUSTER = 5  # places (in a writer's sequence) within which votes add up
# A neighbourhood where under a COHERENT share of the memories read like an anchor says
# little of what belongs together (a store imported in an order of its own, many writers
# interleaved): the KIN memories the search finds for the anchors themselves join it.
COHERENT, KIN = 0.2, 12
ANCHORS = 2  # memories the neighbourhood is taken around
# A turn leaning this much on its context (``query_context.gate`` of at most two terms of its
# own) takes the memories cohesive with an anchor other than themselves (cosine to it at
# least ``query_context_focus_cohesion``) from ``LOW_SHARE`` x ``contextual_min_score`` up.
LOW_GATE, LOW_SHARE = gate(2), 0.6
TERMS_SHARE = 0.2  # BM25's share in ranking the neighbourhood (cosine: 1)

Votes = tuple[tuple[str, float], ...]
# What the search for the anchors finds (``kin_search``; ``kin.KinMemo.search``: memoised).
KinSearch = Callable[[Sequence[Memory], np.ndarray, Retriever, Viewer], list[Memory]]


@dataclass(frozen=True, slots=True)
class Focused:
    """A turn's focus: the memories it was taken around and its offers (``candidates``, best
    first), of which the first ``leading`` (those scoring at least
    ``query_context_focus_lead``) come before the turn's own hits beyond the guaranteed ones
    and the others after them; ``akin``: the steered search's hits that read like an anchor
    (cosine at least ``query_context_focus_cohesion``), the only ones of them the block
    takes (None: no focus, all of them)."""

    anchors: tuple[str, ...] = ()
    candidates: tuple[Candidate, ...] = ()
    leading: int = 0
    akin: frozenset[str] | None = None


NONE = Focused()


def hit_votes(ids: Sequence[str]) -> Votes:
    """The votes of a turn's search hits (best first)."""
    return tuple((m, HIT_VOTE / (rank + 1)) for rank, m in enumerate(ids[:HIT_VOTES]))


def reply_vote(retriever: Retriever, viewer: Viewer, asked: str, in_view: Sequence[str],
               reply: str) -> Votes:
    """The vote of a turn's reply: of the memories ``in_view`` that ``viewer`` is offered and
    that the reply drew on (``drawn_on``), the one the turn's text and its reply (counting
    twice) match best; when none did, the same among the ``WIDE`` memories visible to
    ``viewer`` that match them best of those holding one of their terms found within
    ``WIDE_POSTINGS`` postings, rarest terms first (``Retriever.term_search_within``; none
    when no memory holds enough of the reply's terms: "yes", "three", a reply from the
    model's own knowledge)."""
    terms = set(retriever.query_terms(reply)) if reply else set()
    if not terms:
        return ()
    both = ((asked, 1.0), (reply, 2.0))
    seen = [m.id for m in retriever.live_memories(in_view, viewer) if m is not None]
    best = _best_drawn_on(retriever, seen, terms, both)
    if best is None:
        wide = retriever.term_search_within(both, WIDE, viewer, WIDE_POSTINGS)
        best = _best_drawn_on(retriever, wide, terms, both)
    return () if best is None else ((best, REPLY_VOTE),)


def drawn_on(held: np.ndarray, reply_terms: int) -> np.ndarray:
    """Per memory holding ``held`` of a reply's ``reply_terms`` distinct BM25 terms, whether
    the reply drew on it: it holds at least min(``REPLY_TERMS``, ``REPLY_SHARE`` x their
    number) of them."""
    need = max(1, min(REPLY_TERMS, math.ceil(REPLY_SHARE * reply_terms)))
    return np.asarray(held >= need)


def _best_drawn_on(retriever: Retriever, memory_ids: list[str], reply_terms: set[str],
                   both: tuple[tuple[str, float], ...]) -> str | None:
    """Of ``memory_ids``, the one the reply drew on that ``both`` match best."""
    if not memory_ids:
        return None
    held, scores = retriever.held_scores(memory_ids, reply_terms, both)
    holds = drawn_on(held, len(reply_terms))
    drawn = np.flatnonzero(holds)
    if len(drawn) <= 1:  # none, or the one: no score needed
        return memory_ids[int(drawn[0])] if len(drawn) else None
    return memory_ids[int(np.argmax(np.where(holds, scores, -np.inf)))]


def tally(recent: Sequence[RecentTurn], turn: int) -> dict[str, float]:
    """The votes in force at ``turn``: each earlier turn's hit votes faded by ``DECAY`` per
    turn since, its reply's from the turn after it."""
    total: dict[str, float] = {}

    def add(votes: Votes, weight: float) -> None:
        for memory_id, vote in votes:
            total[memory_id] = total.get(memory_id, 0.0) + vote * weight

    for r in recent:
        if r.turn < turn:
            add(r.votes, DECAY ** (turn - r.turn))
            add(r.reply_votes, DECAY ** (turn - 1 - r.turn))
    return total


def anchors(votes: dict[str, float], retriever: Retriever, viewer: Viewer) -> list[str]:
    """The ``ANCHORS`` voted memories with the most votes within ``CLUSTER`` places of
    them in the same writer's sequence (ties: the heavier own vote, then the id)."""
    placed = [(m, p) for m, p in zip(votes, retriever.places(list(votes), viewer),
                                      strict=True) if p is not None]
    if not placed:
        return []
    writers: dict[tuple[str, ...], int] = {}
    writer = np.array([writers.setdefault(p.writer, len(writers)) for _, p in placed])
    seq = np.array([p.position for _, p in placed], np.int64)
    weight = np.array([votes[m] for m, _ in placed])
    near = (writer[:, None] == writer[None, :]) & (np.abs(seq[:, None] - seq[None, :])
                                                    <= CLUSTER)
    mass = near @ weight
    order = sorted(range(len(placed)), key=lambda i: (-mass[i], -weight[i], placed[i][0]))
    return [placed[i][0] for i in order[:ANCHORS]]


@dataclass(frozen=True, slots=True, eq=False)
class Around:
    """What a turn's focus is taken around, before its query is known: the anchors (and
    their embeddings) and the memories of their neighbourhood (ids, ``Memory.seq`` as
    ``labels``, each one's ``cohesion``: its largest cosine to an anchor other than itself).
    Asked for by the PruneHistory that brings a reply, worked out on a worker thread beside
    the next Inject's embedding."""

    anchors: tuple[str, ...] = ()
    ids: tuple[str, ...] = ()
    labels: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    cohesion: np.ndarray = field(default_factory=lambda: np.zeros(0, np.float32))
    anchor_rows: np.ndarray = field(default_factory=lambda: np.zeros((0, 0), np.float32))


NOWHERE = Around()


def around(recent: Sequence[RecentTurn], turn: int, retriever: Retriever, viewer: Viewer,
           radius: int, cohesive: float, search: KinSearch | None = None) -> Around:
    """What the focus of ``turn`` is taken around: the anchors of the ``recent`` turns'
    votes and their neighbourhood (``radius`` places) as ``viewer`` is offered it now; when
    under a ``COHERENT`` share of those neighbours read like an anchor (cohesion at least
    ``cohesive``), the anchors' ``kin`` too (found by ``search``: ``kin_search`` unless
    given, e.g. ``kin.KinMemo.search``). Every vote fades by the same factor per turn, so
    it is the same for any ``turn`` after the same recent turns."""
    anchor_ids = anchors(tally(recent, turn), retriever, viewer)
    if not anchor_ids:
        return NOWHERE
    near, seqs, rows = _embedded(retriever.neighbourhood(anchor_ids, radius, viewer),
                                 retriever)  # each anchor included
    ids = [m.id for m in near]
    anchored = [k for k, m in enumerate(ids) if m in anchor_ids]
    tied = cohesion(ids, rows, [ids[k] for k in anchored], rows[anchored])
    tied[anchored] = -1.0
    if (tied >= cohesive).sum() < COHERENT * (len(ids) - len(anchored)):  # order says little
        more = kin([near[k] for k in anchored], rows[anchored], set(ids), retriever, viewer,
                   search or kin_search)
        near, seqs, rows = _embedded(sorted([*near, *more], key=lambda m: m.seq), retriever)
        ids = [m.id for m in near]
        anchored = [k for k, m in enumerate(ids) if m in anchor_ids]
    return Around(tuple(anchor_ids), tuple(ids), seqs,
                  cohesion(ids, rows, [ids[k] for k in anchored], rows[anchored]),
                  rows[anchored])


def _embedded(near: Sequence[Memory],
              retriever: Retriever) -> tuple[list[Memory], np.ndarray, np.ndarray]:
    """``near`` less the memories with no stored embedding now, their ``Memory.seq`` and
    their embeddings."""
    seqs = np.array([m.seq for m in near], np.int64)
    rows = retriever.embeddings_at(seqs)
    known = ~np.isnan(rows[:, 0])
    return [m for m, k in zip(near, known.tolist(), strict=True) if k], seqs[known], rows[known]


def kin(anchors: Sequence[Memory], rows: np.ndarray, have: Container[str],
        retriever: Retriever, viewer: Viewer, search: KinSearch | None = None) -> list[Memory]:
    """The ``KIN`` memories offered to ``viewer`` that the search finds for the ``anchors``
    themselves (``search``, ``kin_search`` unless given), less those in ``have``."""
    found = (search or kin_search)(anchors, rows, retriever, viewer)
    return [m for m in found if m.id not in have][:KIN]


def kin_search(anchors: Sequence[Memory], rows: np.ndarray, retriever: Retriever,
               viewer: Viewer) -> list[Memory]:
    """The memories offered to ``viewer`` that a search for the ``anchors`` finds (their
    texts, their embeddings' mean: ``rows``), best first: ``KIN`` + one per anchor."""
    mean = rows.mean(axis=0)
    norm = float(np.linalg.norm(mean))
    if not anchors or norm == 0:
        return []
    found = retriever.search(SearchQuery(
        " ".join(m.content for m in anchors), agent_id=viewer.agent_id,
        limit=KIN + len(anchors), embedding=(mean / norm).astype(np.float32),
        user_id=viewer.user_id, channel_id=viewer.channel_id,
        shared_channel=viewer.shared_channel)).hits
    return [h.memory for h in found]


@dataclass(frozen=True, slots=True)
class Steered:
    """What a turn's search steered by its context gave: the turn's text, the context, the
    query it ranked by, its hits over the floor and its BM25 scores of the turn with its
    context (``SearchResult.lexical``, labels ascending; None: scored here)."""

    text: str
    context: QueryContext
    query: np.ndarray
    hits: Sequence[Candidate]
    lexical: tuple[np.ndarray, np.ndarray] | None = None


def focus(config: MemoryInjectionConfig, taken: Around, steered: Steered, in_view: set[str],
          retriever: Retriever, viewer: Viewer) -> Focused:
    """The focus of a turn ``taken`` around its anchors: the anchors and, best first, the
    ``query_context_focus`` best memories of their neighbourhood not in view, less those
    whose cosine to the steered query is under ``contextual_min_score`` (when the turn's gate
    is at least ``LOW_GATE``: under ``LOW_SHARE`` x it for one cohesive with an anchor other
    than itself). Each offer carries the score and cosine it was admitted by (and the
    search's ranks when the search found it too)."""
    limit, floor = config.query_context_focus, config.contextual_min_score
    context = steered.context
    if limit <= 0 or context.gate <= 0 or not taken.anchors:
        return NONE
    out = np.array([k for k, m in enumerate(taken.ids) if m not in in_view], np.int64)
    rows = retriever.embeddings_at(taken.labels[out])  # nan: gone since
    live = ~np.isnan(rows[:, 0])
    if not live.any():
        return Focused(taken.anchors)
    at = out[live]
    ids = [taken.ids[k] for k in at.tolist()]
    vectors = rows[live]
    cosines = vectors @ steered.query.astype(vectors.dtype, copy=False)
    terms = (looked_up(steered.lexical, taken.labels[at]) if steered.lexical is not None
             else retriever.term_scores(ids, ((steered.text, 1.0), *context.texts)))
    best = float(terms.max())
    scores = cosines + (TERMS_SHARE / best * terms if best > 0 else 0.0)
    passes = cosines >= floor
    if context.gate >= LOW_GATE:
        passes |= ((cosines >= LOW_SHARE * floor)
                   & (taken.cohesion[at] >= config.query_context_focus_cohesion))
    order = [i for i in np.argsort(-scores, kind="stable")[:limit].tolist() if passes[i]]
    ranks = {c.memory.id: c.ranks for c in steered.hits}
    now = retriever.live_memories([ids[i] for i in order], viewer)
    offers = tuple(
        Candidate(memory=memory, section=Section.CONTEXTUAL, score=float(scores[i]),
                  cosine=cosine_of(cosines[i]), embedding=vectors[i],
                  ranks=ranks.get(memory.id, ()))
        for i, memory in zip(order, now, strict=True) if memory is not None)
    return Focused(taken.anchors, offers,
                   sum(c.score >= config.query_context_focus_lead for c in offers),
                   frozenset(c.memory.id for c in steered.hits
                             if reads_like(taken, c, config.query_context_focus_cohesion)))


def far_from(taken: Around, hit: Candidate, cohesion_min: float) -> bool:
    """``hit`` lies outside the focus: not in its neighbourhood, and reading like none of
    its anchors (cosine to each under ``cohesion_min``); anywhere when there is no focus."""
    if not taken.anchors:
        return True
    return hit.memory.id not in taken.ids and not reads_like(taken, hit, cohesion_min)


def reads_like(taken: Around, hit: Candidate, cohesion_min: float) -> bool:
    """``hit`` has a cosine of at least ``cohesion_min`` to one of the focus's anchors."""
    cosines = taken.anchor_rows @ hit.embedding.astype(taken.anchor_rows.dtype, copy=False)
    return bool((cosines >= cohesion_min).any())


def cohesion(ids: Sequence[str], vectors: np.ndarray, anchor_ids: Sequence[str],
             anchor_vectors: np.ndarray) -> np.ndarray:
    """Each of ``ids``' (embedded as ``vectors``) largest cosine to an anchor other than
    itself (-1: none)."""
    cosines = vectors @ anchor_vectors.T.astype(vectors.dtype, copy=False)
    for j, anchor in enumerate(anchor_ids):
        cosines[[i for i, m in enumerate(ids) if m == anchor], j] = -1.0
    best: np.ndarray = cosines.max(axis=1, initial=-1.0)
    return best


def looked_up(scored: tuple[np.ndarray, np.ndarray], labels: np.ndarray) -> np.ndarray:
    """The scores of ``labels`` in ``scored`` (labels ascending, scores); 0 where absent."""
    have, scores = scored
    if not len(have):
        return np.zeros(len(labels), np.float64)
    at = np.minimum(np.searchsorted(have, labels), len(have) - 1)
    return np.where(have[at] == labels, scores[at], 0.0)
