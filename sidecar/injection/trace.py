"""The injection trace: per channel, a bounded ring of its last committed turns.

Each turn keeps the query text (its first ``MAX_QUERY_CHARS`` characters), what was injected
(section, cosine, fused score, per-source ranks) and what was dropped and why. Kept in memory
only: a restart starts every ring empty, and a channel reset or idle sweep clears its ring.
At most ``MAX_CHANNELS`` channels are held; the least recently traced one goes first.
"""

from __future__ import annotations

import threading
from collections import OrderedDict, deque
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum

from sidecar.conversation.focus import NONE as NO_FOCUS
from sidecar.conversation.focus import Focused
from sidecar.conversation.query_context import NONE as NO_CONTEXT
from sidecar.conversation.query_context import QueryContext
from sidecar.injection.types import Candidate, Section
from sidecar.retrieval.contract import SourceRank

MAX_QUERY_CHARS = 1000
MAX_DROPPED = 100  # per turn; the rest are only counted
MAX_CHANNELS = 1000


class DropReason(Enum):
    FLOOR = "floor"  # under the relevance floor of the contextual section
    COOLDOWN = "cooldown"  # carried by a block the agent still holds
    DUPLICATE = "duplicate"  # the same memory twice in this turn (pinned and contextual)
    SEMANTIC = "semantic_duplicate"  # too close to a memory in view or kept before it
    BUDGET = "budget"  # max_total or max_tokens
    CAPTURE_IN_VIEW = "capture_in_view"  # a turn captured in the channel, still in view


@dataclass(frozen=True, slots=True)
class TracedItem:
    memory_id: str
    section: Section
    cosine: float
    score: float  # fused score (0 for pinned)
    ranks: tuple[SourceRank, ...] = ()  # contextual only


@dataclass(frozen=True, slots=True)
class TracedDrop:
    memory_id: str
    reason: DropReason
    cosine: float
    score: float
    shown_in_turn: int = 0  # cooldown: the turn of the block in view that carries it
    duplicate_of: str = ""  # semantic duplicate: the memory it is too close to


@dataclass(frozen=True, slots=True)
class TraceTurn:
    turn: int
    at_us: int
    agent_id: str
    query: str  # at most MAX_QUERY_CHARS characters
    query_chars: int  # the whole query's length
    skip_reason: str  # why nothing was injected; "" otherwise
    injected: tuple[TracedItem, ...]
    dropped: tuple[TracedDrop, ...]  # at most MAX_DROPPED
    dropped_omitted: int  # drops beyond MAX_DROPPED
    elapsed_us: int
    context: QueryContext = NO_CONTEXT  # what steered the search (texts left out)
    focus_anchors: tuple[str, ...] = ()  # the conversation's focus (conversation/focus.py)
    focus_offered: tuple[str, ...] = ()  # what it offered beyond the turn's own hits


def traced_item(c: Candidate) -> TracedItem:
    return TracedItem(c.memory.id, c.section, c.cosine, c.score, c.ranks)


def traced_drop(c: Candidate, reason: DropReason, shown_in_turn: int = 0,
                duplicate_of: str = "") -> TracedDrop:
    return TracedDrop(c.memory.id, reason, c.cosine, c.score, shown_in_turn, duplicate_of)


class TraceRing:
    """Thread-safe rings of ``turns()`` turns per channel (read per record: a reload applies
    to the next turn; 0 = nothing recorded)."""

    def __init__(self, turns: Callable[[], int]) -> None:
        self.turns = turns
        self._lock = threading.Lock()
        self._rings: OrderedDict[str, deque[TraceTurn]] = OrderedDict()

    @property
    def enabled(self) -> bool:
        return self.turns() > 0

    def record(self, channel_id: str, turn: TraceTurn) -> None:
        keep = self.turns()
        if keep <= 0:
            return
        with self._lock:
            ring = self._rings.pop(channel_id, None) or deque()
            self._rings[channel_id] = ring  # most recently traced last
            ring.append(turn)
            while len(ring) > keep:
                ring.popleft()
            while len(self._rings) > MAX_CHANNELS:
                self._rings.popitem(last=False)

    def last(self, channel_id: str, n: int = 0) -> list[TraceTurn]:
        """The channel's last ``n`` turns (0 = all held), oldest first."""
        with self._lock:
            held = list(self._rings.get(channel_id, ()))
        return held[-n:] if n > 0 else held

    def channels(self) -> list[tuple[str, TraceTurn]]:
        """(channel, its latest turn), most recently traced first."""
        with self._lock:
            return [(c, ring[-1]) for c, ring in reversed(self._rings.items()) if ring]

    def forget(self, channel_id: str) -> None:
        with self._lock:
            self._rings.pop(channel_id, None)

    def names(self) -> list[str]:
        """The channels with turns held."""
        with self._lock:
            return list(self._rings)


def trace_turn(agent_id: str, text: str, turn: int, skip_reason: str, elapsed_us: int,
               injected: list[Candidate], dropped: list[TracedDrop], at_us: int,
               context: QueryContext = NO_CONTEXT, focused: Focused = NO_FOCUS,
               own: frozenset[str] = frozenset()) -> TraceTurn:
    """One committed turn, bounded: the query's head and at most MAX_DROPPED drops;
    ``own``: the turn's own search hits (what the focus offered beyond them is listed)."""
    return TraceTurn(
        turn=turn, at_us=at_us, agent_id=agent_id, query=text[:MAX_QUERY_CHARS],
        query_chars=len(text), skip_reason=skip_reason,
        injected=tuple(traced_item(c) for c in injected),
        dropped=tuple(dropped[:MAX_DROPPED]), dropped_omitted=max(0, len(dropped) - MAX_DROPPED),
        elapsed_us=elapsed_us,
        context=QueryContext(None, (), context.turns, context.gate),
        focus_anchors=focused.anchors,
        focus_offered=tuple(c.memory.id for c in focused.candidates
                            if c.memory.id not in own),
    )
