"""Query context: a turn's search steered by the channel's recent exchanges.

A follow-up ("why that one?", "and who runs it?") means little alone. Each user turn's text
and embedding are kept with the channel's state when the turn is committed, and the
assistant's reply to it when a PruneHistory of the channel shows it. The next turns search
with them at a lower weight than their own text, recent turns weighing more:

- lexical: the earlier turns' and replies' terms are scored apart in BM25 and added so that
  their best document scores ``query_context_terms`` x the best score of the turn's own terms
  (``SearchQuery.context_texts``, ``BM25Index.with_context``);
- vector: a recency-weighted mean of the earlier turns' embeddings, scaled to
  ``query_context_weight``, is added to the turn's unit embedding (``SearchQuery.context``).

Both weights are scaled by a gate: a turn that says almost nothing by itself takes the
context fully; a turn that says enough to stand alone (a new topic's question, or a precise
one on the same subject) takes none of it and is searched exactly as Search would.
Nothing is embedded again: the vectors are the ones the server computed when it served
those turns (replies count lexically only). docs/decisions/0014-query-context.md has the
measurements behind the weights and the gate.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import numpy as np

from sidecar.injection.config import MemoryInjectionConfig

# Earlier turns kept per channel (the largest ``query_context_turns``).
MAX_TURNS = 8
# Characters of a turn's text or an assistant reply kept for the context (the end).
MAX_CONTEXT_CHARS = 2000
# The gate (``gate``): the turn's own BM25 term counts between which the context goes from
# full weight to none.
GATE_TERMS_FULL, GATE_TERMS_OFF = 1, 5


@dataclass(frozen=True, slots=True)
class RecentTurn:
    """An earlier user turn of the channel: its number, text, its text's unit embedding,
    the assistant's reply to it ("" until a PruneHistory shows one), and its votes for the
    conversation's focus (``sidecar.conversation.focus``): its search's and its reply's."""

    turn: int
    text: str
    embedding: np.ndarray
    reply: str = ""
    votes: tuple[tuple[str, float], ...] = ()
    reply_votes: tuple[tuple[str, float], ...] = ()
    speaker: str = ""  # who said it ("": not known)

    @property
    def quiet(self) -> bool:
        """A content-free turn ("ok thanks"), or one kept without its text (``kept_turn``):
        kept only so its reply attaches to it; it steers nothing and votes for nothing."""
        return not self.text


@dataclass(frozen=True, slots=True)
class QueryContext:
    """What steers one turn's search: ``vector`` (added to the turn's unit embedding; None:
    none), ``texts`` (BM25 terms at their weights) and, for the trace, the weight each
    earlier turn got: (turn, BM25 weight, vector weight, its reply included)."""

    vector: np.ndarray | None
    texts: tuple[tuple[str, float], ...] = ()
    turns: tuple[tuple[int, float, float, bool], ...] = ()
    gate: float = 0.0  # ``gate``: the share of the configured weights applied


NONE = QueryContext(None)
# Whether a text holds what the vault's PII gate refuses (``sidecar.vault.screen``).
HoldsSecret = Callable[[str], bool]


def kept_text(text: str, holds_secret: HoldsSecret) -> str:
    """What a channel keeps of a turn's text or of a reply for its next turns (its end, in
    memory and in the store): nothing of one that holds a secret or a personal identifier."""
    text = text[-MAX_CONTEXT_CHARS:]
    return "" if text and holds_secret(text) else text


def kept_turn(turn: int, text: str, embedding: np.ndarray, holds_secret: HoldsSecret,
              votes: tuple[tuple[str, float], ...] = (), speaker: str = "") -> RecentTurn:
    """A user turn as its channel keeps it (``kept_text``); a turn kept without its text is kept
    without its embedding too (zeros: an embedding can be turned back into much of its text),
    so it steers no search, and the reply to it still finds it."""
    text = kept_text(text, holds_secret)
    return RecentTurn(turn, text, embedding if text else np.zeros_like(embedding), votes=votes,
                      speaker=speaker)


def spoken(recent: Sequence[RecentTurn], turn: int, speaker: str) -> list[RecentTurn]:
    """The turns before ``turn`` that a turn of ``speaker`` follows on from: its speaker's
    own (with the replies to them) when ``speaker`` is known, else every speaker's; never a
    content-free one."""
    return [r for r in recent
            if r.turn < turn and not r.quiet and (not speaker or r.speaker == speaker)]


def query_context(config: MemoryInjectionConfig, recent: Sequence[RecentTurn], turn: int,
                  own_terms: int, speaker: str = "") -> QueryContext:
    """The context of ``turn`` (whose text has ``own_terms`` distinct BM25 terms) from the
    channel's ``recent`` turns (oldest first): the last ``query_context_turns`` before
    ``turn`` that it follows on from (``spoken``), each weighted ``decay`` x the one after
    it, all times the turn's ``gate``."""
    terms, weight = config.query_context_terms, config.query_context_weight
    earlier = spoken(recent, turn, speaker)[-config.query_context_turns:]
    if not earlier or config.query_context_turns <= 0 or (terms <= 0 and weight <= 0):
        return NONE
    g = gate(own_terms)
    if g <= 0:
        return NONE
    decay = [config.query_context_decay ** (len(earlier) - 1 - i) for i in range(len(earlier))]
    vector = None
    if weight > 0:  # the weighted mean as a unit vector, times the weight
        mixed = np.einsum("i,ij->j", np.array(decay, np.float32),
                          np.vstack([r.embedding for r in earlier]))
        norm = float(np.linalg.norm(mixed))
        if norm > 0:
            vector = (mixed * (weight * g / norm)).astype(np.float32)
    texts: list[tuple[str, float]] = []
    for d, r in zip(decay, earlier, strict=True) if terms > 0 else ():
        texts += [(text, terms * g * d) for text in (r.text, r.reply) if text]
    vectors = weight * g if vector is not None else 0.0
    turns = tuple((r.turn, round(terms * g * d, 4), round(vectors * d, 4), bool(r.reply))
                  for d, r in zip(decay, earlier, strict=True))
    return QueryContext(vector, tuple(texts), turns, round(g, 4))


def gate(own_terms: int) -> float:
    """How much a turn leans on its context, 0..1, by the BM25 terms of its own: fully with
    at most ``GATE_TERMS_FULL`` ("Why?", "and who runs it?"), not at all from
    ``GATE_TERMS_OFF`` on (a question that stands alone, on the same subject or a new one),
    linearly between."""
    share = (GATE_TERMS_OFF - own_terms) / (GATE_TERMS_OFF - GATE_TERMS_FULL)
    return min(1.0, max(0.0, share))


def remember(recent: list[RecentTurn], asked: RecentTurn) -> list[RecentTurn]:
    """``recent`` with ``asked`` added (the last MAX_TURNS kept; of content-free turns only
    the latest, which waits for its reply)."""
    kept = [r for r in recent if r.turn != asked.turn and not r.quiet] + [asked]
    return kept[-MAX_TURNS:]


def replied(recent: list[RecentTurn], reply: str,
            votes: tuple[tuple[str, float], ...] = ()) -> tuple[list[RecentTurn],
                                                                RecentTurn | None]:
    """``recent`` with ``reply`` (and its focus ``votes``) as the answer to its last turn,
    and that turn (None when there is no turn or it already has this reply)."""
    reply = reply[-MAX_CONTEXT_CHARS:]
    if not recent or not reply or recent[-1].reply == reply:
        return recent, None
    last = replace(recent[-1], reply=reply, reply_votes=votes)
    return [*recent[:-1], last], last
