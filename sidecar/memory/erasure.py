"""Erasure for good: an end user (ForgetUser), one memory (ForgetMemory's hard mode), the
captures retention or a full scope let go.

Rows go in transactions of at most ``chunk`` memories, each under the write lock, so other
calls wait for one chunk at most, never for the whole erasure; the in-memory indexes drop
each chunk as it commits (the listeners a forget calls). An interrupted erasure is finished
by calling it again (it selects what is left). Then the erased users' channels lose their
whole state, as ResetChannel does, and their owner rows (a channel id such as "dm-alice"
names its user: the channel belongs to the agent of its next Inject), and the bytes leave the
disk (``DiskScrub``). One log line records it, with counts only.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, fields
from typing import Protocol

from sidecar.errors import InvalidArgument
from sidecar.memory.scrub import DiskScrub
from sidecar.memory.service import MemoryService
from sidecar.memory.validation import check_id
from sidecar.records import Memory
from sidecar.store.erasure import ErasedRows, ErasureRepo

log = logging.getLogger(__name__)

# Memories per transaction: one chunk's statements took 7 ms (median) and 47 ms at most on a
# 100k store, 2 loaded cores (bench/results/forget_user.md); 100 took twice that.
CHUNK = 50


class Channels(Protocol):
    """The injection state of channels (the Injector's)."""

    def erase(self, channel_id: str) -> bool:
        """Drop the channel's whole state, as ResetChannel does; whether it had one."""
        ...

    def refresh(self, channel_id: str) -> None:
        """Its memory copy is read again from the store (a saved reply was blanked)."""
        ...

    def write_waiting(self) -> None:
        """Write the turns kept for a shared store away (Unavailable while it still is)."""
        ...


class Owners(Protocol):
    """Who owns each channel (``ChannelOwners``)."""

    def release(self, channel_id: str) -> None:
        """The channel's owner row goes: its next Inject's agent owns it."""
        ...


@dataclass(frozen=True, slots=True)
class Erased:
    """What an erasure removed, counted as ForgetUserResponse counts it."""

    memories: int = 0
    versions: int = 0
    edges: int = 0
    captures: int = 0
    channels: int = 0

    def __add__(self, other: Erased) -> Erased:
        return Erased(*(getattr(self, f.name) + getattr(other, f.name) for f in fields(self)))

    def counts(self) -> dict[str, int]:
        return {f.name: getattr(self, f.name) for f in fields(self)}


def _counted(rows: ErasedRows) -> Erased:
    return Erased(len(rows.memories), rows.versions, len(rows.edges), rows.captures)


def _ms_since(begin: float) -> float:
    return round((time.perf_counter() - begin) * 1000, 1)


class Eraser:
    def __init__(self, service: MemoryService, repo: ErasureRepo, scrub: DiskScrub,
                 channels: Channels | None = None, chunk: int = CHUNK) -> None:
        self.service = service
        self.repo = repo
        self.scrub = scrub
        self.channels = channels
        self.owners: Owners | None = None
        self.chunk = chunk

    def forget_user(self, agent_id: str, user_id: str) -> Erased:
        """Erase every memory of ``agent_id``'s ``user_id`` (forgotten ones too), their
        capture records and the state of the channels they spoke in. An empty ``agent_id``
        is the shared scope, where calls without an agent keep their users' memories."""
        if not user_id:
            raise InvalidArgument("user_id is required", field="user_id")
        begin = time.perf_counter()
        if self.channels is not None:  # turns kept through an outage: erased with the rest
            self.channels.write_waiting()
        done, labels = self._erase_user(agent_id, user_id)
        # A turn of the user committed while the first pass ran (its capture record, its
        # channel's state, what the capture drain made of it) goes with the second.
        again, more = self._erase_user(agent_id, user_id)
        done, labels = done + again, labels + more
        self._scrub(labels, done)
        log.info("user erased", extra={"agent": agent_id, **done.counts(),
                                       "elapsed_ms": _ms_since(begin)})
        return done

    def _erase_user(self, agent_id: str, user_id: str) -> tuple[Erased, list[int]]:
        """One pass of ``forget_user``: what it erased, and the erased memories' labels."""
        channels = self.repo.user_channels(agent_id, user_id)
        done = Erased(captures=self._transaction(
            lambda: self.repo.erase_user_captures(agent_id, user_id)))
        labels: list[int] = []
        while ids := self.repo.user_memories(agent_id, user_id, self.chunk):
            rows = self._erase_chunk(ids)
            labels += [m.seq for m in rows.memories]
            done += _counted(rows)
            if not rows.memories:
                break  # another sidecar erased them meanwhile
        done += Erased(channels=sum(self._erase_channel(c) for c in channels))
        if self.owners is not None:  # a channel id may name its user
            for channel_id in channels:
                self.owners.release(channel_id)
        return done, labels

    def erase_memory(self, memory_id: str, agent_id: str = "",
                     shared_ok: bool = True) -> tuple[Memory, Erased]:
        """Erase one memory of ``agent_id``'s scope (or a shared one, when ``shared_ok``):
        the memory as it was, and the counts. NOT_FOUND once it is gone."""
        check_id(memory_id, "id")
        begin = time.perf_counter()
        with self.service.write_lock:
            with self._writing():
                memory = self.service.writable(memory_id, agent_id, shared_ok)
                rows = self.repo.erase_memories([memory_id])
            self._unlist(rows)
        done = _counted(rows)
        self._scrub([memory.seq], done)
        log.info("memory erased", extra={"agent": agent_id, **done.counts(),
                                         "elapsed_ms": _ms_since(begin)})
        return memory, done

    def erase(self, ids: Sequence[str], why: str) -> Erased:
        """Erase the memories of ``ids`` (retention), then scrub the disk."""
        done = Erased()
        labels: list[int] = []
        for start in range(0, len(ids), self.chunk):
            rows = self._erase_chunk(list(ids[start:start + self.chunk]))
            labels += [m.seq for m in rows.memories]
            done += _counted(rows)
        if done.memories:
            self._scrub(labels, done)
            log.info("captures erased", extra={"why": why, **done.counts()})
        return done

    def erase_records_before(self, agent_id: str, before_us: int) -> int:
        """``agent_id``'s capture records (pending, refused, or a deduplicated turn's text)
        older than ``before_us``; how many."""
        return self._transaction(lambda: self.repo.erase_captures_before(agent_id, before_us))

    def make_room(self, agent_id: str, count: int) -> bool:
        """Inside a write transaction (the capacity gate): erase the scope's ``count``
        oldest live captures, or nothing when it has fewer. The indexes drop them once the
        write commits; the disk is scrubbed after it, off the caller's path."""
        ids = self.repo.oldest_captures(agent_id, count)
        if len(ids) < count:
            return False
        rows = self.repo.erase_memories(ids)
        self.service.after_commit(lambda: self._unlist(rows))
        self.service.after_commit(lambda: self.scrub.later(m.seq for m in rows.memories))
        log.info("captures erased", extra={"why": "scope full", "memories": len(ids)})
        return True

    # --- helpers --------------------------------------------------------------------------

    @contextmanager
    def _writing(self) -> Iterator[None]:
        """One write transaction, under the write lock."""
        with self.service.write_lock:
            with self.service.committing():
                self.service.hold(lambda: None)  # its rows may be of any scope
                yield

    def _transaction(self, work: Callable[[], int]) -> int:
        with self._writing():
            return work()

    def _erase_chunk(self, ids: list[str]) -> ErasedRows:
        with self.service.write_lock:
            with self._writing():
                rows = self.repo.erase_memories(ids)
            self._unlist(rows)
        return rows

    def _unlist(self, rows: ErasedRows) -> None:
        """The in-memory indexes drop them (as a forget does) and their edges."""
        self.service.listeners.forgotten(rows.memories)
        if rows.edges:
            self.service.listeners.edges([], rows.edges)
        if self.channels is not None:
            for channel_id in rows.channels:
                self.channels.refresh(channel_id)

    def _erase_channel(self, channel_id: str) -> int:
        if self.channels is None:
            return 0
        return int(self.channels.erase(channel_id))

    def _scrub(self, labels: list[int], done: Erased) -> None:
        if labels or done.captures or done.channels:
            self.scrub.now(labels)
