"""Per-channel injection state: turn counter, injected ids with their turn, semantic buffer.

Kept in memory for speed; ``ChannelStates`` loads a channel from the repository on first use
and hands every change to a ``Writer`` (write-behind in the server: SQLite is written after the
reply), so a restart keeps what the conversation already holds. The memory copy is always the
authority; reads of SQLite (a channel loaded, a reset) wait for that channel's queued writes.
Never reset on compaction; only ``reset`` (a new conversation) clears a channel.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from sidecar.injection.state_repo import BufferRow, InjectedRow, StateRepo
from sidecar.store.write_behind import Writer, WriteThrough

# The semantic buffer is pruned by turn age (context_window_depth) and also bounded in size.
BUFFER_MAX = 512
# Channels kept in memory (least recently used beyond this are dropped; SQLite has them).
MAX_CACHED_CHANNELS = 1024


@dataclass(frozen=True, slots=True)
class Injected:
    """When and in which version a memory was last injected in a channel."""

    turn: int
    version: int
    at_us: int


@dataclass(slots=True)
class ChannelState:
    channel_id: str
    turn: int = 0
    injected: dict[str, Injected] = field(default_factory=dict)
    buffer_ids: list[str] = field(default_factory=list)
    buffer_turns: list[int] = field(default_factory=list)
    # Rows of the injected memories' embeddings; (0, 0) until the first one.
    buffer: np.ndarray = field(default_factory=lambda: np.zeros((0, 0), dtype=np.float32))
    lock: threading.Lock = field(default_factory=threading.Lock)

    def in_cooldown(self, memory_id: str, turn: int, depth: int) -> Injected | None:
        """The injection record when ``memory_id`` was injected within the last ``depth`` turns."""
        seen = self.injected.get(memory_id)
        if seen is None or turn - seen.turn > depth:
            return None
        return seen

    def live_buffer(self, turn: int, depth: int) -> np.ndarray:
        """Buffer rows injected within the last ``depth`` turns."""
        if not self.buffer_turns:
            return self.buffer[:0]
        turns = np.asarray(self.buffer_turns)
        return self.buffer[turn - turns <= depth]

    def record(self, memory_ids: list[str], versions: list[int], embeddings: np.ndarray,
               turn: int, now_us: int, depth: int) -> bool:
        """Add injected memories; drop entries older than ``depth`` turns or beyond the bound.

        Returns whether anything was dropped (SQLite holds the same rows, so it needs the
        same prune only then)."""
        for memory_id, version in zip(memory_ids, versions, strict=True):
            self.injected[memory_id] = Injected(turn=turn, version=version, at_us=now_us)
        if memory_ids:
            rows = embeddings.astype(np.float32, copy=False)
            self.buffer = np.vstack([self.buffer, rows]) if len(self.buffer) else rows.copy()
            self.buffer_ids.extend(memory_ids)
            self.buffer_turns.extend([turn] * len(memory_ids))
        return self._prune(turn, depth)

    def _prune(self, turn: int, depth: int) -> bool:
        old = [m for m, seen in self.injected.items() if turn - seen.turn > depth]
        for memory_id in old:
            del self.injected[memory_id]
        stale = [i for i, t in enumerate(self.buffer_turns) if turn - t > depth]
        overflow = max(0, len(self.buffer_turns) - len(stale) - BUFFER_MAX)
        if not stale and not overflow:
            return bool(old)
        drop = set(stale)
        fresh = [i for i in range(len(self.buffer_turns)) if i not in drop]
        drop.update(fresh[:overflow])  # oldest first
        keep = [i for i in range(len(self.buffer_turns)) if i not in drop]
        self.buffer = self.buffer[keep]
        self.buffer_ids = [self.buffer_ids[i] for i in keep]
        self.buffer_turns = [self.buffer_turns[i] for i in keep]
        return True


class ChannelStates:
    """All channels: loaded lazily from the repository, every change handed to the writer."""

    def __init__(self, repo: StateRepo, writer: Writer | None = None,
                 max_cached: int = MAX_CACHED_CHANNELS) -> None:
        self.repo = repo
        self.writer = writer if writer is not None else WriteThrough(repo.db)
        self.max_cached = max_cached
        self._channels: OrderedDict[str, ChannelState] = OrderedDict()
        self._lock = threading.Lock()
        self._pending: dict[str, int] = {}  # channel -> writes queued, not yet run
        self._pending_lock = threading.Lock()

    def get(self, channel_id: str) -> ChannelState:
        with self._lock:
            state = self._channels.get(channel_id)
            if state is None:
                state = self._load(channel_id)
                self._channels[channel_id] = state
                self._evict()
            else:
                self._channels.move_to_end(channel_id)
            return state

    def _evict(self) -> None:
        """Drop least recently used idle channels beyond the cap (they are all persisted)."""
        for channel_id in list(self._channels)[: max(0, len(self._channels) - self.max_cached)]:
            if not self._channels[channel_id].lock.locked():
                del self._channels[channel_id]

    def _load(self, channel_id: str) -> ChannelState:
        self._settle(channel_id)  # an evicted channel may still have writes queued
        saved = self.repo.load(channel_id)
        state = ChannelState(channel_id=channel_id)
        if saved is None:
            return state
        state.turn = saved.turn
        state.injected = {
            r.memory_id: Injected(turn=r.turn, version=r.version, at_us=r.at_us)
            for r in saved.injected
        }
        if saved.buffer:
            state.buffer = np.vstack([r.embedding for r in saved.buffer]).astype(np.float32)
            state.buffer_ids = [r.memory_id for r in saved.buffer]
            state.buffer_turns = [r.turn for r in saved.buffer]
        return state

    def save_turn(self, state: ChannelState) -> None:
        channel_id, turn = state.channel_id, state.turn
        self._submit(channel_id,
                     lambda: self.repo.save(channel_id, turn, [], [], prune_before=None))

    def commit(self, state: ChannelState, memory_ids: list[str], versions: list[int],
               embeddings: np.ndarray, now_us: int, depth: int,
               also: Callable[[], None] | None = None) -> None:
        """Record what survived the budget at ``state.turn``: in memory now, in SQLite through
        the writer (with ``also``, in the same transaction).

        SQLite mirrors the in-memory rows (loaded from it, changed only here), so its prune
        runs only when the in-memory one dropped something: most turns skip three DELETEs."""
        pruned = state.record(memory_ids, versions, embeddings, state.turn, now_us, depth)
        channel_id, turn = state.channel_id, state.turn
        rows = [InjectedRow(m, turn, v, now_us) for m, v in zip(memory_ids, versions,
                                                                 strict=True)]
        buffer = [BufferRow(m, turn, embeddings[i]) for i, m in enumerate(memory_ids)]
        prune_before = turn - depth if pruned else None

        def write() -> None:
            self.repo.save(channel_id, turn, rows, buffer, prune_before=prune_before,
                           buffer_max=BUFFER_MAX)
            if also is not None:
                also()

        self._submit(channel_id, write)

    def _submit(self, channel_id: str, write: Callable[[], None]) -> None:
        with self._pending_lock:
            self._pending[channel_id] = self._pending.get(channel_id, 0) + 1

        def job() -> None:
            try:
                write()
            finally:  # still inside the writer's transaction: readers wait for its commit
                with self._pending_lock:
                    left = self._pending.pop(channel_id) - 1
                    if left:
                        self._pending[channel_id] = left

        self.writer.submit(job)

    def _settle(self, channel_id: str) -> None:
        """Wait for the channel's queued writes (a new or idle channel has none: no wait)."""
        with self._pending_lock:
            pending = channel_id in self._pending
        if pending:
            self.writer.flush()

    def reset(self, channel_id: str) -> bool:
        with self._lock:
            had = self._channels.pop(channel_id, None)
            if had is None:
                self._settle(channel_id)
                return self.repo.delete(channel_id)
            with had.lock:  # let an Inject in flight on this channel finish first
                self._settle(channel_id)
                return self.repo.delete(channel_id)

    def close(self) -> None:
        """Write everything still queued."""
        self.writer.close()
