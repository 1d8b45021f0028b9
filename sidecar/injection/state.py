"""Per-channel injection state: the last committed turn, the blocks the agent still holds,
the ids each of them carried, and their embeddings (the semantic buffer).

A memory is "already seen" only while a block that carried it is in the agent's history
(``view``). Kept in memory for speed; ``ChannelStates`` (``sidecar.injection.channels``)
loads a channel from SQLite on first use and writes every change through a ``Writer``.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from sidecar.conversation.query_context import RecentTurn, remember
from sidecar.injection.types import Injection
from sidecar.records import Viewer

if TYPE_CHECKING:
    from sidecar.conversation.room import Ahead

# The semantic buffer is bounded in rows whatever the number of blocks held.
BUFFER_MAX = 512
# Speakers a channel state holds: telling one from several needs two.
SPEAKERS_KEPT = 2


@dataclass(frozen=True, slots=True)
class Injected:
    """When (the turn of its latest block) and in which version a memory was injected."""

    turn: int
    version: int
    at_us: int


@dataclass(frozen=True, slots=True)
class Block:
    """A non-empty block given to the agent: its turn and the digest that recognises it."""

    turn: int
    digest: str


@dataclass(frozen=True, slots=True)
class Committed:
    """What one Inject records: the block's ids (empty block: none) and the reply itself."""

    turn: int
    ids: list[str]
    versions: list[int]
    embeddings: np.ndarray
    digest: str
    reply: Injection
    at_us: int
    asked: RecentTurn | None = None  # the turn's text and embedding (None: not searched)
    speaker: str | None = None  # the user who spoke, to record (None: nothing new)


def held_turns(blocks: list[Block], turn: int, keep: int | None, depth: int,
               incoming: bool) -> frozenset[int]:
    """Turns of the blocks the agent holds at ``turn``.

    ``incoming``: the block of ``turn`` is about to be added and counts toward ``keep``
    (PruneHistory's ``max_keep`` counts it), so ``keep - 1`` earlier blocks remain. ``keep``
    None: blocks are never pruned, and ``depth`` turns bound the view instead.
    """
    if keep is None:
        return frozenset(b.turn for b in blocks if turn - b.turn <= depth)
    room = keep - 1 if incoming else keep
    if room <= 0:
        return frozenset()
    return frozenset(b.turn for b in blocks[-room:])


@dataclass(slots=True)
class ChannelState:
    channel_id: str
    turn: int = 0  # the last committed turn
    injected: dict[str, Injected] = field(default_factory=dict)
    blocks: list[Block] = field(default_factory=list)  # held, oldest first
    keep: int | None = None  # blocks the agent keeps, as its last PruneHistory said
    last: Injection | None = None  # the reply of ``turn``: a retry gets it again
    buffer_ids: list[str] = field(default_factory=list)
    buffer_turns: list[int] = field(default_factory=list)
    # Rows of the injected memories' embeddings; (0, 0) until the first one.
    buffer: np.ndarray = field(default_factory=lambda: np.zeros((0, 0), dtype=np.float32))
    recent: list[RecentTurn] = field(default_factory=list)  # the query context, oldest first
    # What the conversation focus of the turn after ``turn`` is taken around, as (turn,
    # viewer, around), worked out off the Inject path when a PruneHistory brings the reply
    # (never stored).
    around: Ahead | None = None
    # Users who have spoken in the channel ('' = a turn without user_id), at most
    # SPEAKERS_KEPT of them: two or more make it a channel several people read.
    speakers: frozenset[str] = frozenset()
    # The reply of ``turn`` as stored, when read from the store and not needed yet: its
    # memories are fetched on a retry (``reply``), not when the channel is read.
    stored_reply: Callable[[], Injection] | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)

    def copy(self) -> ChannelState:
        """The committed fields as they are now (``restore`` puts them back)."""
        return ChannelState(self.channel_id, self.turn, dict(self.injected), list(self.blocks),
                            self.keep, self.last, list(self.buffer_ids),
                            list(self.buffer_turns), self.buffer, list(self.recent),
                            speakers=self.speakers, stored_reply=self.stored_reply)

    def restore(self, saved: ChannelState) -> None:
        """Undo a ``record`` whose write failed (the lock stays this state's)."""
        self.turn, self.injected, self.blocks = saved.turn, saved.injected, saved.blocks
        self.keep, self.last, self.buffer = saved.keep, saved.last, saved.buffer
        self.buffer_ids, self.buffer_turns = saved.buffer_ids, saved.buffer_turns
        self.recent, self.speakers = saved.recent, saved.speakers
        self.stored_reply = saved.stored_reply

    def reply(self) -> Injection | None:
        """The reply of ``turn`` (None: none kept), read from the store on first use."""
        if self.stored_reply is not None:
            self.last, self.stored_reply = self.stored_reply(), None
        return self.last

    def shared_with(self, user_id: str) -> bool:
        """Whether a turn of ``user_id`` makes (or finds) the channel one where several
        users have spoken."""
        return len(self.speakers | {user_id}) > 1

    def viewer(self, agent_id: str, user_id: str | None = None) -> Viewer:
        """Who a turn of the channel is for: ``user_id``'s, or (None: the turn is not known,
        as in PruneHistory) the channel's only speaker's."""
        if user_id is None:
            user_id = next(iter(self.speakers)) if len(self.speakers) == 1 else ""
        return Viewer(agent_id, user_id, self.channel_id, self.shared_with(user_id))

    def new_speaker(self, user_id: str) -> str | None:
        """``user_id`` when the store may not know it spoke here yet, else None."""
        return None if user_id in self.speakers else user_id

    def view(self, turn: int, keep: int | None, depth: int) -> frozenset[int]:
        """Turns of the earlier blocks still in view when the block of ``turn`` is built."""
        return held_turns(self.blocks, turn, self.keep if self.keep is not None else keep,
                          depth, incoming=True)

    def in_view(self, memory_id: str, view: frozenset[int]) -> Injected | None:
        """The injection record when a block carrying ``memory_id`` is in ``view``."""
        seen = self.injected.get(memory_id)
        return seen if seen is not None and seen.turn in view else None

    def ids_in(self, view: frozenset[int]) -> set[str]:
        """The memories the blocks in ``view`` carry."""
        return {m for m, seen in self.injected.items() if seen.turn in view}

    def view_buffer(self, view: frozenset[int]) -> np.ndarray:
        """Embeddings of the memories carried by the blocks in ``view``."""
        if not self.buffer_turns or not view:
            return self.buffer[:0]
        mask = np.fromiter((t in view for t in self.buffer_turns), dtype=np.bool_,
                           count=len(self.buffer_turns))
        return self.buffer[mask]

    def view_buffer_ids(self, view: frozenset[int]) -> list[str]:
        """The memory of each row of ``view_buffer(view)``."""
        return [m for m, t in zip(self.buffer_ids, self.buffer_turns, strict=True) if t in view]

    def record(self, entry: Committed, keep: int | None, depth: int) -> bool:
        """Commit ``entry`` and forget blocks the agent no longer holds.

        Returns whether rows were dropped (SQLite then needs the same prune)."""
        self.turn, self.last, self.stored_reply = entry.turn, entry.reply, None
        if entry.speaker is not None and len(self.speakers) < SPEAKERS_KEPT:
            self.speakers |= {entry.speaker}
        if entry.asked is not None:
            self.recent = remember(self.recent, entry.asked)
        for memory_id, version in zip(entry.ids, entry.versions, strict=True):
            self.injected[memory_id] = Injected(entry.turn, version, entry.at_us)
        if entry.ids:
            self.blocks.append(Block(entry.turn, entry.digest))
            rows = entry.embeddings.astype(np.float32, copy=False)
            self.buffer = np.vstack([self.buffer, rows]) if len(self.buffer) else rows.copy()
            self.buffer_ids.extend(entry.ids)
            self.buffer_turns.extend([entry.turn] * len(entry.ids))
        keep = self.keep if self.keep is not None else keep
        return self.retain(held_turns(self.blocks, entry.turn, keep, depth, incoming=False))

    def retain(self, turns: frozenset[int]) -> bool:
        """Keep only the blocks of ``turns`` (and their ids and buffer rows)."""
        before = (len(self.blocks), len(self.injected), len(self.buffer_turns))
        self.blocks = [b for b in self.blocks if b.turn in turns]
        keep = [i for i, t in enumerate(self.buffer_turns) if t in turns]
        # An id whose latest block went but an earlier held one carried it stays, at that turn.
        held = {self.buffer_ids[i]: self.buffer_turns[i] for i in keep}
        self.injected = {m: s if s.turn in turns else Injected(held[m], s.version, s.at_us)
                         for m, s in self.injected.items() if s.turn in turns or m in held}
        keep = keep[max(0, len(keep) - BUFFER_MAX):]  # bounded, oldest out first
        if len(keep) != len(self.buffer_turns):
            self.buffer = self.buffer[keep]
            self.buffer_ids = [self.buffer_ids[i] for i in keep]
            self.buffer_turns = [self.buffer_turns[i] for i in keep]
        return before != (len(self.blocks), len(self.injected), len(self.buffer_turns))
