"""Query context: a turn's search steered by the channel's recent exchanges.

A follow-up ("why that one?", "and who runs it?") means little alone. Each user turn's text
and embedding are kept with the channel's state when the turn is committed, and the
assistant's reply to it when a PruneHistory of the channel shows it. The next turns search
with them at a lower weight than their own text, recent turns weighing more:

- lexical: the earlier turns' and replies' terms count ``query_context_terms`` x as much as
  the turn's own in BM25 (``SearchQuery.context_texts``);
- vector: a recency-weighted mean of the earlier turns' embeddings, scaled to
  ``query_context_weight``, is added to the turn's unit embedding (``SearchQuery.context``).

Both weights are scaled by a gate: a turn close to the earlier ones, or one that says almost
nothing by itself, takes the context fully; a turn far from them that says enough to stand
alone (a new topic's question) takes none of it and is searched exactly as Search would.
Nothing is embedded again: the vectors are the ones the server computed when it served
those turns (replies count lexically only). docs/decisions/0014-query-context.md has the
measurements behind the weights and the gate.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from sidecar.injection.config import MemoryInjectionConfig
from sidecar.retrieval.contract import Retriever

# Earlier turns kept per channel (the largest ``query_context_turns``).
MAX_TURNS = 8
# Characters of an assistant reply kept for the context (its end, nearest the next turn).
MAX_REPLY_CHARS = 2000
# The gate (``gate``): cosines of the turn to its earlier turns, and its own BM25 term counts,
# between which the context goes from off to full weight.
GATE_OFF, GATE_FULL = 0.2, 0.4
GATE_TERMS_FULL, GATE_TERMS_OFF = 1, 4


@dataclass(frozen=True, slots=True)
class RecentTurn:
    """An earlier user turn of the channel: its number, text, its text's unit embedding,
    and the assistant's reply to it ("" until a PruneHistory shows one)."""

    turn: int
    text: str
    embedding: np.ndarray
    reply: str = ""


@dataclass(frozen=True, slots=True)
class QueryContext:
    """What steers one turn's search: ``vector`` (added to the turn's unit embedding; None:
    none), ``texts`` (BM25 terms at their weights) and, for the trace, the weight each
    earlier turn got: (turn, BM25 weight, vector weight, its reply included)."""

    vector: np.ndarray | None
    texts: tuple[tuple[str, float], ...] = ()
    turns: tuple[tuple[int, float, float, bool], ...] = ()
    similarity: float = 0.0  # the turn's cosine to the earlier turns' (weighted) mean
    gate: float = 0.0  # ``gate``: the share of the configured weights applied


NONE = QueryContext(None)


def query_context(config: MemoryInjectionConfig, recent: Sequence[RecentTurn], turn: int,
                  own: np.ndarray, own_terms: int) -> QueryContext:
    """The context of ``turn`` (its text's unit embedding ``own``, ``own_terms`` distinct BM25
    terms) from the channel's ``recent`` turns (oldest first): the last
    ``query_context_turns`` before ``turn``, each weighted ``decay`` x the one after it, all
    times the turn's ``gate``."""
    terms, weight = config.query_context_terms, config.query_context_weight
    earlier = [r for r in recent if r.turn < turn][-config.query_context_turns:]
    if not earlier or config.query_context_turns <= 0 or (terms <= 0 and weight <= 0):
        return NONE
    decay = [config.query_context_decay ** (len(earlier) - 1 - i) for i in range(len(earlier))]
    mixed = np.einsum("i,ij->j", np.array(decay, np.float32),
                      np.vstack([r.embedding for r in earlier]))
    norm = float(np.linalg.norm(mixed))
    if norm <= 0:
        return NONE
    similarity = float(own @ mixed) / norm
    g = gate(similarity, own_terms)
    if g <= 0:
        return QueryContext(None, (), (), round(similarity, 4), 0.0)
    scale = weight * g / norm
    vector = (mixed * scale).astype(np.float32) if weight > 0 else None
    texts: list[tuple[str, float]] = []
    if terms > 0:
        for d, r in zip(decay, earlier, strict=True):
            texts.append((r.text, terms * g * d))
            if r.reply:
                texts.append((r.reply, terms * g * d))
    turns = tuple((r.turn, round(terms * g * d, 4), round(scale * d if weight > 0 else 0.0, 4),
                   bool(r.reply)) for d, r in zip(decay, earlier, strict=True))
    return QueryContext(vector, tuple(texts), turns, round(similarity, 4), round(g, 4))


class Steering:
    """The search's ``Steer`` of one turn: called with the text's embedding, it computes the
    turn's context (kept in ``context`` for the trace)."""

    def __init__(self, config: MemoryInjectionConfig, recent: Sequence[RecentTurn], turn: int,
                 text: str, retriever: Retriever) -> None:
        self._args = config, recent, turn
        self._text, self._retriever = text, retriever
        self.context = NONE

    def __call__(self, own: np.ndarray) -> tuple[np.ndarray | None, tuple[tuple[str, float], ...]]:
        terms = len(self._retriever.query_terms(self._text))
        self.context = query_context(*self._args, own, terms)
        return self.context.vector, self.context.texts


def steering(config: MemoryInjectionConfig, recent: Sequence[RecentTurn], turn: int, text: str,
             retriever: Retriever) -> Steering | None:
    """The steering of ``turn`` (``text``); None when it can have no context (the first turn,
    or query context off): the search is then Search's."""
    if (config.query_context_turns <= 0 or not any(r.turn < turn for r in recent)
            or (config.query_context_terms <= 0 and config.query_context_weight <= 0)):
        return None
    return Steering(config, recent, turn, text, retriever)


def gate(similarity: float, own_terms: int) -> float:
    """How much a turn leans on its context, 0..1: fully when it is close to the earlier
    turns (cosine ``GATE_FULL`` and up) or says almost nothing by itself (at most
    ``GATE_TERMS_FULL`` BM25 terms: "Why?", "and who runs it?"); not at all when it is far
    from them (cosine ``GATE_OFF`` and below) and says enough to stand alone
    (``GATE_TERMS_OFF`` terms and more): a new topic's question."""
    close = (similarity - GATE_OFF) / (GATE_FULL - GATE_OFF)
    terse = (GATE_TERMS_OFF - own_terms) / (GATE_TERMS_OFF - GATE_TERMS_FULL)
    return min(1.0, max(0.0, close, terse))


def remember(recent: list[RecentTurn], asked: RecentTurn) -> list[RecentTurn]:
    """``recent`` with ``asked`` added (the last MAX_TURNS kept)."""
    kept = [r for r in recent if r.turn != asked.turn] + [asked]
    return kept[-MAX_TURNS:]


def replied(recent: list[RecentTurn], reply: str) -> tuple[list[RecentTurn], RecentTurn | None]:
    """``recent`` with ``reply`` as the answer to its last turn, and that turn (None when
    there is no turn or it already has this reply)."""
    reply = reply[-MAX_REPLY_CHARS:]
    if not recent or not reply or recent[-1].reply == reply:
        return recent, None
    last = replace(recent[-1], reply=reply)
    return [*recent[:-1], last], last
