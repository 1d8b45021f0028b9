"""An in-memory mirror of the live memories, so the search hot path never touches SQLite.

Records by ``seq`` and id, plus columns indexed by ``seq`` (alive, type, owner, private,
channel, importance, updated_at) for vectorised filters and fusion inputs. Columns are
replaced, never resized in place, when they grow, so a reader's reference stays valid.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Sequence
from typing import NamedTuple

import numpy as np

from sidecar.records import Memory, MemoryType, Viewer
from sidecar.retrieval.contract import Accept

_ANY_TYPE = np.zeros(0, np.int8)
_NO_KEYS = np.zeros(0, np.int32)


def among(values: np.ndarray, wanted: np.ndarray) -> np.ndarray:
    """``np.isin(values, wanted)``; for the few values a filter names (a viewer's one or
    two private keys, a handful of types) one comparison each, without ``isin``'s sort."""
    if len(wanted) > 4:
        return np.isin(values, wanted)
    found = np.zeros(values.shape, dtype=bool)
    for value in wanted.tolist():
        found |= values == value
    return found


class Visibility(NamedTuple):
    """What ``LiveMemories.filter`` accepts: a label in range (else label 0), ``alive``,
    ``owner`` 0 (shared) or ``code``, ``kind`` among ``wanted`` (empty: any type), and
    ``private`` 0 (general knowledge) or among ``keys`` (the viewer's user and channel)."""

    alive: np.ndarray
    owner: np.ndarray
    code: int
    kind: np.ndarray
    wanted: np.ndarray
    private: np.ndarray
    keys: np.ndarray


class LiveMemories:
    def __init__(self, capacity: int = 1024) -> None:
        self._lock = threading.Lock()
        self._by_seq: dict[int, Memory] = {}
        self._seq_of: dict[str, int] = {}
        self._agents: dict[str, int] = {"": 0}
        self._channels: dict[str, int] = {"": 0}
        self._keys: dict[str, int] = {"": 0}  # interned ``Memory.private_key``
        self._private: set[int] = set()  # seqs of live memories owned by an agent or private
        # Seqs of memories already given to or read by an agent, or edited after they were
        # stored: the pinned section prefers them (see sidecar/injection/pinned.py).
        self._established: set[int] = set()
        self.alive = np.zeros(capacity, bool)
        self.type = np.zeros(capacity, np.int8)
        self.owner = np.zeros(capacity, np.int32)  # 0 = shared, else an interned agent id
        self.private = np.zeros(capacity, np.int32)  # 0 = none, else an interned private_key
        self.channel = np.zeros(capacity, np.int32)  # 0 = none, else an interned channel id
        self.importance = np.zeros(capacity, np.float64)
        self.updated_at = np.zeros(capacity, np.int64)

    def __len__(self) -> int:
        return len(self._by_seq)

    def put(self, memories: Sequence[Memory]) -> None:
        with self._lock:
            self._grow(max(m.seq for m in memories) + 1 if memories else 0)
            for m in memories:
                # Filters read these columns without the lock: owner and type are set before
                # alive, so a new private memory is never seen as alive and shared.
                key = m.private_key
                if m.agent_id or key:
                    self._private.add(m.seq)
                self.type[m.seq] = int(m.type)
                self.owner[m.seq] = self._agents.setdefault(m.agent_id, len(self._agents))
                self.private[m.seq] = self._keys.setdefault(key, len(self._keys))
                self.channel[m.seq] = self._channels.setdefault(m.channel_id,
                                                                len(self._channels))
                self.importance[m.seq] = m.importance
                self.updated_at[m.seq] = m.updated_at
                self.alive[m.seq] = True
                self._by_seq[m.seq] = m
                self._seq_of[m.id] = m.seq
                if m.access_count > 0 or m.version > 1:
                    self._established.add(m.seq)
                if not m.agent_id and not key:
                    self._private.discard(m.seq)

    def drop(self, memories: Iterable[Memory]) -> list[int]:
        """Remove memories; returns the seqs that were live."""
        gone: list[int] = []
        with self._lock:
            for m in memories:
                seq = self._seq_of.pop(m.id, None)
                if seq is not None:
                    self.alive[seq] = False
                    del self._by_seq[seq]
                    self._private.discard(seq)
                    self._established.discard(seq)
                    gone.append(seq)
        return gone

    def snapshot(self) -> list[Memory]:
        """Every live memory, copied under the lock (for counts read at scrape time)."""
        with self._lock:
            return list(self._by_seq.values())

    def get(self, seq: int) -> Memory | None:
        return self._by_seq.get(seq)

    def seq_of(self, memory_id: str) -> int | None:
        return self._seq_of.get(memory_id)

    def accept(self, viewer: Viewer, types: Sequence[MemoryType] = ()) -> Accept | None:
        """A vectorised filter: live, offered to ``viewer`` (``Memory.offered_to``), of
        ``types``.

        None when it would accept every live memory (no type filter, no private memory in the
        store): the indexes hold only live memories, so they can skip filtering.
        """
        if not types and not self._private:
            return None
        return self.filter(viewer, types)

    def visibility(self, viewer: Viewer, types: Sequence[MemoryType] = ()) -> Visibility:
        """The columns ``filter`` reads, for kernels that apply it themselves."""
        code = self._agents.get(viewer.agent_id, -1) if viewer.agent_id else -1
        wanted = np.array([int(t) for t in types], np.int8) if types else _ANY_TYPE
        known = [self._keys[k] for k in viewer.private_keys if k in self._keys]
        keys = np.array(known, np.int32) if known else _NO_KEYS
        return Visibility(self.alive, self.owner, code, self.type, wanted, self.private, keys)

    def filter(self, viewer: Viewer, types: Sequence[MemoryType] = ()) -> Accept:
        """Like ``accept`` but always a function (checks liveness too)."""
        v = self.visibility(viewer, types)
        alive, owner, kind, code, wanted = v.alive, v.owner, v.kind, v.code, v.wanted
        private, keys = v.private, v.keys

        def accept(labels: np.ndarray) -> np.ndarray:
            idx = np.where((labels > 0) & (labels < len(alive)), labels, 0)
            mask = alive[idx]
            who = owner[idx]
            mask &= (who == 0) | (who == code)
            whose = private[idx]
            mask &= (whose == 0) | among(whose, keys)
            if len(wanted):
                mask &= among(kind[idx], wanted)
            return mask

        return accept

    def mark_established(self, memory_ids: Iterable[str]) -> None:
        """These memories were given to an agent (injected) or read."""
        with self._lock:
            for memory_id in memory_ids:
                seq = self._seq_of.get(memory_id)
                if seq is not None:
                    self._established.add(seq)

    def members(self, accept: Accept) -> list[tuple[Memory, bool]]:
        """Every accepted live memory, with whether it is established (``mark_established``,
        or accessed or edited when it was put)."""
        seqs = np.flatnonzero(self.alive)
        found = []
        for seq in seqs[accept(seqs)].tolist():
            memory = self._by_seq.get(seq)
            if memory is not None:
                found.append((memory, seq in self._established))
        return found

    def scope(self, agent_id: str) -> Accept:
        """A vectorised filter: live memories owned by exactly ``agent_id`` ('' = shared)."""
        alive, owner = self.alive, self.owner
        code = self._agents.get(agent_id, -1)

        def accept(labels: np.ndarray) -> np.ndarray:
            idx = np.where((labels > 0) & (labels < len(alive)), labels, 0)
            mask: np.ndarray = alive[idx] & (owner[idx] == code)
            return mask

        return accept

    def reserve(self, labels: int) -> None:
        """Columns with room for labels below ``labels`` (zeroed: pages are taken as used)."""
        with self._lock:
            self._grow(labels)

    def _grow(self, needed: int) -> None:
        size = len(self.alive)
        if needed <= size:
            return
        new = max(needed, 2 * size)

        def grown(a: np.ndarray) -> np.ndarray:
            out = np.zeros(new, a.dtype)
            out[:size] = a
            return out

        self.alive, self.type, self.owner = grown(self.alive), grown(self.type), grown(self.owner)
        self.channel, self.private = grown(self.channel), grown(self.private)
        self.importance, self.updated_at = grown(self.importance), grown(self.updated_at)
