"""All channels' injection state: loaded lazily from SQLite, each turn written before its reply.

A turn's commit (its state rows, its reply and the access records) is one transaction written
in the caller's thread before the reply leaves, so a restart, even after kill -9, returns the
same reply to a retried turn (docs/decisions/0015-durable-turn.md). What a PruneHistory reports
(the blocks still held) goes through the writer, after the reply; a commit and the reads of
SQLite (a channel loaded, a reset) first wait for that channel's queued writes. Never reset on
compaction; only ``reset`` (a new conversation) clears a channel.

A channel is read from the store by the first call that needs it, while the other calls go on
(those of the same channel wait for that read, once); a ``drop`` or ``reset`` during the read
makes it read again. A ``reset`` holds up the calls of its channel only. A call works on the
channel under its lock (``locked``): a copy reset, dropped or evicted while the call waited
for the lock is not the channel's any more, and the call gets the channel again.

A shared store away: the turn is served from the memory copy, and its commit is kept here
with what the turn's transaction had to write with it (``durable``: its capture), written by
the next commit or a background catch-up once the store is back
(docs/decisions/0021-captures-through-an-outage.md).
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict, deque
from collections.abc import Callable, Collection, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from functools import partial
from typing import NamedTuple

import numpy as np

from sidecar import after_reply
from sidecar.conversation.query_context import replied
from sidecar.errors import Unavailable
from sidecar.injection import replies
from sidecar.injection.state import Block, ChannelState, Committed, Injected
from sidecar.injection.state_repo import (
    BufferRow,
    ChannelMoved,
    ChosenErased,
    Dropped,
    InjectedRow,
    Saved,
    SavedChannel,
    StateRepo,
)
from sidecar.records import Memory
from sidecar.store.catch_up import CatchUp
from sidecar.store.scope_keys import user_digest
from sidecar.store.write_behind import Writer, WriteThrough

log = logging.getLogger(__name__)

# Channels kept in memory (least recently used beyond this are dropped; SQLite has them).
MAX_CACHED_CHANNELS = 1024
# Shared store away: commits kept here (oldest dropped beyond this) until it is back, and at
# most as many turns' durable writes (beyond, a turn that has one is refused: UNAVAILABLE).
MAX_DEFERRED = 10_000
# Durable writes of deferred turns written in one transaction on the store's return.
PROMISED_GROUP = 64
# Tries of a kept commit's merge whose memories another sidecar keeps erasing meanwhile.
MERGE_ATTEMPTS = 3


Owner = tuple[str, str]  # (agent_id, user_id) of a user's turn
Condition = tuple[str, tuple[object, ...]]  # an SQL condition and its parameters


class _Kept(NamedTuple):
    """A commit kept for a store away; ``owner``: the user whose turn it is (None: none)."""

    channel_id: str
    saved: Saved
    owner: Owner | None = None


class _Promised(NamedTuple):
    """A kept turn's durable write (its capture) and the user whose turn it is."""

    write: Callable[[], None]
    owner: Owner | None = None


class _UserErased(Exception):
    """The user of a kept turn was erased by another sidecar while the store was away."""


@dataclass(eq=False)
class _Reading:
    """A channel's read from the store, or its reset, in flight: the calls of that channel
    wait for it."""

    done: threading.Event = field(default_factory=threading.Event)
    # Dropped or reset meanwhile: what it read (a failed reset: the copy it took) is not kept.
    stale: bool = False


class ChannelStates:
    def __init__(self, repo: StateRepo, fetch: replies.Fetch, writer: Writer | None = None,
                 max_cached: int = MAX_CACHED_CHANNELS, shared: bool = False) -> None:
        """``fetch``: memories by id (the memory repository's ``get_many``), to restore a
        channel's last reply from its saved ids. ``shared``: other sidecars inject on the
        same channels (a shared store): each commit is a compare-and-swap on the turn,
        written before the reply; only the access records go through ``writer``."""
        self.shared = shared
        self._deferred: deque[_Kept] = deque(maxlen=MAX_DEFERRED)
        self._promised: deque[_Promised] = deque()  # deferred turns' durable writes
        self._deferred_lock = threading.Lock()  # one writer of what waits at a time
        # The kept commits' deque: held only to read or change it, never over the store's
        # work (a feed read inside a write transaction drops a channel's: ``gone_elsewhere``).
        self._kept_lock = threading.Lock()
        self._taken = 0  # kept turns taken out of the deques and being written (counted)
        self._catch_up = CatchUp(self._caught_up, "channel-catch-up")
        self.repo = repo
        self.fetch = fetch
        self.writer = writer if writer is not None else WriteThrough(repo.db)
        self.max_cached = max_cached
        self._channels: OrderedDict[str, ChannelState] = OrderedDict()
        self._reading: dict[str, _Reading] = {}
        self._resetting: dict[str, _Reading] = {}
        self._lock = threading.Lock()  # the three above; never held over the store's work
        self._pending: dict[str, int] = {}  # channel -> writes queued, not yet run
        self._pending_lock = threading.Lock()
        # Queued writes not handed to the writer yet (after the reply: ``_send``), in order.
        self._unsent: list[Callable[[], None]] = []
        self._send_lock = threading.Lock()  # one hand-off at a time keeps their order
        self._held: set[str] = set()  # claimed provisionally: commits wait for the claim
        # A shared store: the condition under which a commit kept here while it was away is
        # merged (the channel not reset by another sidecar since this one's change feed last
        # read; decision 0047). None: merged as it is.
        self.merge_check: Callable[[str], Condition] | None = None
        # A shared store: the condition under which a user's turn kept here is written (the
        # user not erased by another sidecar since this one's change feed last read). None:
        # written as it is.
        self.user_check: Callable[[Owner], Condition] | None = None
        # Raises its error, in the merge's batch, unless these memories are all still there
        # (the memory repository's ``still_there``). None: not checked.
        self.still_there: Callable[[list[Memory], Exception, list[Owner]], None] | None = None

    def get(self, channel_id: str) -> ChannelState:
        while True:
            with self._lock:
                state = self._channels.get(channel_id)
                if state is not None:
                    self._channels.move_to_end(channel_id)
                    return state
                busy = self._resetting.get(channel_id) or self._reading.get(channel_id)
                if busy is None:
                    reading = self._reading[channel_id] = _Reading()
            if busy is not None:  # reset, or read by another call: then held, or read here
                busy.done.wait()
                continue
            try:
                state = self._load(channel_id)
            except BaseException:
                self._read(channel_id, reading)
                raise
            if self._read(channel_id, reading, state):
                return state

    @contextmanager
    def locked(self, channel_id: str) -> Iterator[ChannelState]:
        """The channel's copy with its lock held. A copy reset, dropped or evicted between
        the ``get`` and the lock is not used (a commit on it would write the old
        conversation over a reset, or a second copy's turn): the channel is got again."""
        while True:
            state = self.get(channel_id)
            with state.lock:
                with self._lock:
                    current = self._channels.get(channel_id) is state
                if current:
                    yield state
                    return

    def _read(self, channel_id: str, reading: _Reading,
              state: ChannelState | None = None) -> bool:
        """The read of ``channel_id`` is over (``state``: what it read, None: it failed);
        whether its copy is kept (not dropped or reset meanwhile)."""
        with self._lock:
            del self._reading[channel_id]
            if state is None or reading.stale:
                state = None
            else:
                self._channels[channel_id] = state
                self._evict()
        reading.done.set()
        return state is not None

    def _evict(self) -> None:
        """Drop least recently used idle channels beyond the cap (they are all persisted)."""
        for channel_id in list(self._channels)[: max(0, len(self._channels) - self.max_cached)]:
            if not self._channels[channel_id].lock.locked():
                del self._channels[channel_id]

    def _load(self, channel_id: str) -> ChannelState:
        self._settle(channel_id)  # an evicted channel may still have writes queued
        state = ChannelState(channel_id=channel_id)
        try:
            saved = self.repo.load(channel_id)
        except Unavailable:
            if not self.shared:
                raise
            log.warning("shared store away: channel served from an empty state until it is "
                        "back", extra={"channel": channel_id})
            return state
        if saved is not None:
            _restore(state, saved, self.fetch)
        return state

    def drop(self, channel_id: str) -> None:
        """Forget the memory copy (the next ``get`` reads the store, and a read in flight is
        made again). A call holding the copy's lock finishes on it: on a shared store its
        commit, a compare-and-swap on the copy's turn, fails when the channel was reset or
        erased meanwhile, and the turn is built again on what the store holds."""
        with self._lock:
            self._channels.pop(channel_id, None)
            self._stale(channel_id)

    def drop_naming(self, ids: Collection[str]) -> int:
        """Drop the copies that name one of ``ids`` (memories another sidecar erased for
        good: it deleted their rows and blanked the saved replies quoting them, which these
        copies still hold, with their vectors in the buffer), and make every read in flight
        again; how many copies. Scanned without the cache lock (a call of another channel
        never waits for it)."""
        erased = set(ids)
        with self._lock:
            held = list(self._channels.items())
            for busy in self._reading.values():
                busy.stale = True
        named = [(c, s) for c, s in held if any(i in s.injected for i in erased)
                 or not erased.isdisjoint(s.buffer_ids)]
        with self._lock:
            for channel_id, state in named:
                if self._channels.get(channel_id) is state:
                    del self._channels[channel_id]
        return len(named)

    def names(self) -> list[str]:
        """The channels held in memory, read or reset in flight, or with commits kept for
        a store away."""
        with self._kept_lock:
            kept = dict.fromkeys(k.channel_id for k in self._deferred)
        with self._lock:
            return list({**self._channels, **self._reading, **self._resetting, **kept})

    def users_erased(self, digests: Collection[str]) -> None:
        """Another sidecar erased the users of ``digests`` (``scope_keys.user_digest``):
        their turns kept for a store away go, durable writes included (what they said is
        erased too), with the kept commits of each channel where they had one (ForgetUser
        erases the channels a user spoke in)."""
        erased = set(digests)

        def theirs(owner: Owner | None) -> bool:
            return owner is not None and user_digest(owner) in erased

        with self._kept_lock:
            kept = [p for p in self._promised if not theirs(p.owner)]
            dropped = len(self._promised) - len(kept)
            self._promised.clear()
            self._promised.extend(kept)
            channels = {k.channel_id for k in self._deferred if theirs(k.owner)}
        if dropped:
            log.warning("turns kept while the shared store was away of users another sidecar "
                        "erased: not written", extra={"turns": dropped})
        for channel_id in sorted(channels):
            self._drop_kept(channel_id, "channel of a user another sidecar erased while the "
                                        "shared store was away: the turns kept here are "
                                        "dropped, not merged")

    def gone_elsewhere(self, channel_id: str) -> None:
        """Another sidecar reset or erased the channel: the memory copy goes (``drop``) and
        so do its commits kept for a store away, which were built on the conversation it
        deleted (their durable writes, what the user said, are kept; decision 0047)."""
        self._drop_kept(channel_id, "channel reset by another sidecar while the shared store "
                                    "was away: the turns kept here are dropped, not merged")

    def _drop_kept(self, channel_id: str, why: str) -> None:
        """Drop the memory copy and the kept commits of the channel (logged: ``why``)."""
        with self._kept_lock:
            dropped = self._undefer(channel_id)
        self.drop(channel_id)
        if dropped:
            log.warning(why, extra={"channel": channel_id, "turns": dropped})

    def _stale(self, channel_id: str) -> None:
        for busy in (self._reading.get(channel_id), self._resetting.get(channel_id)):
            if busy is not None:
                busy.stale = True

    def commit(self, state: ChannelState, entry: Committed, keep: int | None, depth: int,
               also: Callable[[], None] | None = None,
               durable: Callable[[], None] | None = None,
               guard: Callable[[], None] | None = None, owner: Owner | None = None) -> None:
        """Record ``entry`` in memory and in SQLite (with ``also`` and ``durable``, in the same
        transaction), committed before this returns; a failed write leaves the memory copy as
        it was and raises (``guard``, run first in that transaction, raises to write nothing).
        On a shared store ``also`` goes through the writer, ``durable`` and ``guard`` stay
        in the turn's batch (the guard first). SQLite mirrors the memory rows (loaded from
        it, changed only here), so its prune runs only when the memory one dropped
        something. ``owner``: the user whose turn it is, (agent, user); a turn kept for a
        shared store away is dropped if another sidecar erases that user meanwhile."""
        expect = state.turn
        before = state.copy()
        saved = rows_of(state, entry, state.record(entry, keep, depth),
                        None if self.shared else before)
        channel_id = state.channel_id
        if self.shared:
            try:
                self._commit_shared(state, saved, expect, durable, guard, owner)
            except BaseException:
                state.restore(before)
                raise
            if also is not None:
                self.writer.submit(also)
            return

        try:
            self._settle(channel_id)  # a PruneHistory's view queued before this turn
            with self.repo.db.transaction():
                if guard is not None:
                    guard()
                self.repo.write(channel_id, saved)
                for write in (also, durable):
                    if write is not None:
                        write()
        except BaseException:
            state.restore(before)
            raise

    def _commit_shared(self, state: ChannelState, saved: Saved, expect: int,
                       durable: Callable[[], None] | None = None,
                       guard: Callable[[], None] | None = None,
                       owner: Owner | None = None) -> None:
        """ChannelMoved (nothing written) when another sidecar committed a turn of the
        channel since this copy was read: ``drop`` it and build again. While the store is
        away the memory copy serves and the commit waits here, ``durable`` with it, unless
        the copy was dropped meanwhile (a reset elsewhere: ChannelMoved)."""
        channel_id = state.channel_id
        try:
            if channel_id in self._held:
                raise Unavailable("the channel's claim is not settled")
            self._reconcile()
            if durable is None and guard is None:
                self.repo.save(channel_id, saved, expect=expect)
            else:
                self._save_with(channel_id, saved, expect, durable, guard)
        except Unavailable as err:
            with self._lock:
                current = self._channels.get(channel_id) is state
            if not current:  # built on a conversation reset or erased meanwhile
                raise ChannelMoved(channel_id) from None
            self._defer(_Kept(channel_id, saved, owner), durable, err)

    def _save_with(self, channel_id: str, saved: Saved, expect: int,
                   durable: Callable[[], None] | None,
                   guard: Callable[[], None] | None) -> None:
        """The commit, after its ``guard`` and with its durable write, in one batch (one
        round trip). A batch the store refused for another reason than the swap or the
        guard is tried again as a transaction in which the durable write has a savepoint of
        its own (its failure never costs the turn)."""
        try:
            with self.repo.db.batched():
                self._save_all(channel_id, saved, expect, durable, guard)
        except (ChannelMoved, Unavailable):
            raise
        except Exception:
            log.warning("turn and its durable write refused as one batch: written apart",
                        exc_info=True, extra={"channel": channel_id})
            with self.repo.db.transaction():
                self._save_all(channel_id, saved, expect, durable, guard)

    def _save_all(self, channel_id: str, saved: Saved, expect: int,
                  durable: Callable[[], None] | None,
                  guard: Callable[[], None] | None) -> None:
        if guard is not None:
            guard()
        self.repo.save(channel_id, saved, expect=expect)
        if durable is not None:
            durable()

    def _defer(self, kept: _Kept, durable: Callable[[], None] | None,
               err: Unavailable) -> None:
        """Keep a commit the store could not take (and its durable write: never dropped
        unless its user is erased, so a turn with one is refused when ``MAX_DEFERRED`` of
        them wait)."""
        with self._deferred_lock:
            if durable is not None:
                if len(self._promised) >= MAX_DEFERRED:
                    raise Unavailable(
                        f"{err.message}; {MAX_DEFERRED} turns wait on this sidecar to be "
                        "written and this one was not recorded: retry once it is back")
            with self._kept_lock:
                if durable is not None:
                    self._promised.append(_Promised(durable, kept.owner))
                self._deferred.append(kept)
        log.warning("shared store away: channel state kept here until it is back",
                    extra={"channel": kept.channel_id, "deferred": len(self._deferred),
                           "promised": len(self._promised)})
        self._catch_up.wake()

    @property
    def deferred(self) -> int:
        """Turns kept here for a store away: durable writes, and commits of channels whose
        claim is settled (the others wait for it)."""
        with self._kept_lock:
            return self._taken + len(self._promised) + sum(
                1 for k in self._deferred if k.channel_id not in self._held)

    def _caught_up(self) -> bool:
        """Write what waits for the store; whether only held claims' commits are left."""
        try:
            self._reconcile()
        except Unavailable:
            return False
        return self.deferred == 0

    def write_waiting(self) -> None:
        """Write now what waits for a shared store that was away (Unavailable while it
        still is), so an erasure after it finds it."""
        self._reconcile()

    def _reconcile(self) -> None:
        """Write the durable writes of the turns made while the store was away, apart from
        their state (they are kept whatever becomes of it; one may run again after a commit
        whose answer was lost, so it must be idempotent, as a capture's is), then
        their commits (turn: the larger; ids: union), except those of channels whose
        provisional claim is not settled yet."""
        with self._deferred_lock:
            while group := self._next_promised():
                try:
                    self._write_promised(group)
                except BaseException:
                    with self._kept_lock:
                        self._promised.extendleft(reversed([p for p, _ in group]))
                    raise
                finally:
                    with self._kept_lock:
                        self._taken = 0
            held: list[_Kept] = []
            try:
                while taken := self._next_kept(held):
                    kept, checks = taken
                    try:
                        self._merge(kept, *checks)
                    except BaseException:
                        with self._kept_lock:
                            self._deferred.appendleft(kept)
                        raise
                    finally:
                        with self._kept_lock:
                            self._taken = 0
            finally:
                with self._kept_lock:
                    self._deferred.extendleft(reversed(held))

    def _next_promised(self) -> list[tuple[_Promised, Condition | None]]:
        """The next durable writes to make (at most PROMISED_GROUP), taken out, each with
        its ``user_check`` made as they are taken: a user erasure the feed hands on before
        has dropped them (``users_erased``), one after is in the check (the feed keeps its
        snapshot after it hands them on)."""
        with self._kept_lock:
            group = [self._promised.popleft()
                     for _ in range(min(PROMISED_GROUP, len(self._promised)))]
            self._taken = len(group)
            return [(p, self._user_check(p.owner)) for p in group]

    def _user_check(self, owner: Owner | None) -> Condition | None:
        return None if owner is None or self.user_check is None else self.user_check(owner)

    def _write_promised(self, group: list[tuple[_Promised, Condition | None]]) -> None:
        """The durable writes in one transaction, each of a user another sidecar erased
        meanwhile left out (its scope held against the erasure, then checked)."""
        erased = 0
        with self.repo.db.transaction():
            for promised, check in group:
                try:
                    with self.repo.db.transaction():  # a savepoint: a refusal drops this one
                        self._hold_user(promised.owner, check)
                        promised.write()
                except _UserErased:
                    erased += 1
        if erased:
            log.warning("turns kept while the shared store was away of users another sidecar "
                        "erased meanwhile: not written", extra={"turns": erased})

    def _hold_user(self, owner: Owner | None, check: Condition | None,
                   memories: list[Memory] | None = None, channel_id: str = "") -> None:
        """In the caller's transaction or batch: the scopes of ``memories`` and ``owner``
        held shared against an erasure (in one statement), then ChosenErased unless the
        memories are all still there, and _UserErased unless ``check`` holds."""
        users = [owner] if owner is not None and check is not None else []
        if self.still_there is not None and (memories or users):
            self.still_there(memories or [], ChosenErased(channel_id), users)
        if users and check is not None:
            self.repo.db.check(*check, _UserErased(users[0][0]))

    def _next_kept(self, held: list[_Kept]
                   ) -> tuple[_Kept, tuple[Condition | None, Condition | None]] | None:
        """The next kept commit to merge, taken out, with its ``merge_check`` and its
        user's ``user_check`` made as it is taken (see ``_next_promised``); None: none left
        (those of claims not settled go to ``held``)."""
        with self._kept_lock:
            while self._deferred:
                kept = self._deferred.popleft()
                if kept.channel_id in self._held:
                    held.append(kept)
                    continue
                self._taken = 1
                return kept, (
                    None if self.merge_check is None else self.merge_check(kept.channel_id),
                    self._user_check(kept.owner))
        return None

    def _merge(self, kept: _Kept, check: Condition | None, user: Condition | None) -> None:
        """Merge a kept commit, unless another sidecar reset or erased the channel (or its
        user) since this one last read the change feed (then dropped, as ``gone_elsewhere``
        does), without its rows naming memories erased meanwhile (those still there are
        checked in the merge's batch, as a turn's commit checks what it chose: decision
        0047)."""
        why = "memories of a turn kept here erased while it was merged: dropped, not merged"
        for _ in range(MERGE_ATTEMPTS):
            saved, found = self._still_there(kept.saved)
            guard = partial(self._hold_user, kept.owner, user, found, kept.channel_id)
            try:
                self.repo.merge(kept.channel_id, saved, check, guard)
                return
            except ChosenErased:
                continue  # one erased between the read and the merge: read again
            except (ChannelMoved, _UserErased):
                why = ("channel or user erased or reset by another sidecar while the shared "
                       "store was away: a turn kept here is dropped, not merged")
                break
        log.warning(why, extra={"channel": kept.channel_id})

    def _still_there(self, saved: Saved) -> tuple[Saved, list[Memory]]:
        """``saved`` without what names memories gone from the store, and the memories it
        still names (none: ``still_there`` unset, nothing looked up)."""
        named = _named(saved)
        if self.still_there is None or not named:
            return saved, []
        found = self.fetch(sorted(named))
        return _without(saved, named - found.keys()), list(found.values())

    def hold(self, channel_id: str) -> None:
        """The channel was claimed provisionally: keep its commits here until ``settle``."""
        self._held.add(channel_id)

    def settle(self, channel_id: str, kept: bool) -> None:
        """The provisional claim is settled: its commits are written with the others
        (``kept``), or dropped with the memory copy (another sidecar's claim won; their
        durable writes are kept)."""
        self._held.discard(channel_id)
        if not kept:
            self._drop_kept(channel_id, "channel claimed by another sidecar while the shared "
                                        "store was away: the turns served here are dropped, "
                                        "not merged")

    def confirm(self, state: ChannelState) -> None:
        """On a shared store, before a retry answers from ``state``: ChannelMoved when the
        channel's rows are gone from the store (another sidecar reset or erased it) while
        the copy has turns and no commit of it is kept here (the store away: the copy
        serves)."""
        if not self.shared or not state.turn:
            return
        with self._kept_lock:
            if any(k.channel_id == state.channel_id for k in self._deferred):
                return
        try:
            stored = self.repo.stored(state.channel_id)
        except Unavailable:
            return
        if not stored:
            raise ChannelMoved(state.channel_id)

    def _undefer(self, channel_id: str) -> int:
        """Drop the channel's kept commits (``_kept_lock`` held); how many."""
        others = [k for k in self._deferred if k.channel_id != channel_id]
        dropped = len(self._deferred) - len(others)
        if dropped:
            self._deferred.clear()
            self._deferred.extend(others)
        return dropped

    def observe(self, channel_id: str, digests: set[str], keep: int, reply: str = "",
                votes: tuple[tuple[str, float], ...] = (), voted: int = 0) -> list[int]:
        """A PruneHistory of the channel's history: the agent keeps ``keep`` blocks and holds
        exactly the known blocks whose digest is in ``digests``; ``reply``: the assistant's
        answer to the last turn, as the history ends with it ("" : none); ``votes``: the
        reply's focus votes, worked out for the recent turn ``voted`` (dropped when that is
        no longer the last). Returns the turns of the blocks no longer held."""
        with self.locked(channel_id) as state:
            gone = [b.turn for b in state.blocks if b.digest not in digests]
            state.keep = keep
            state.retain(frozenset(b.turn for b in state.blocks if b.digest in digests))
            if not state.recent or state.recent[-1].turn != voted:
                votes = ()
            state.recent, answered = replied(state.recent, reply, votes)
            if state.turn:
                held = frozenset(b.turn for b in state.blocks)
                self._submit(channel_id,
                             lambda: self.repo.save_view(channel_id, keep, held, answered))
        return gone

    def _submit(self, channel_id: str, write: Callable[[], None]) -> None:
        """Queue ``write``; the writer gets it once the call's reply is sent (waking its
        thread beside the reply slows the reply: ``sidecar.after_reply``), or sooner when a
        commit, a load or a reset of the channel waits for it (``_settle``)."""

        def job() -> None:
            try:
                write()
            finally:  # still inside the writer's transaction: readers wait for its commit
                with self._pending_lock:
                    left = self._pending.pop(channel_id) - 1
                    if left:
                        self._pending[channel_id] = left

        with self._pending_lock:
            self._pending[channel_id] = self._pending.get(channel_id, 0) + 1
            self._unsent.append(job)
        after_reply.later(self._send)

    def _send(self) -> None:
        """Hand the queued writes to the writer, in the order they were queued."""
        with self._send_lock:
            with self._pending_lock:
                jobs, self._unsent = self._unsent, []
            for job in jobs:
                self.writer.submit(job)

    def _settle(self, channel_id: str) -> None:
        """Wait for the channel's queued writes (a new or idle channel has none: no wait)."""
        with self._pending_lock:
            pending = channel_id in self._pending
        if pending:
            self._send()
            self.writer.flush()

    def reset(self, channel_id: str) -> bool:
        """Delete the channel's state; whether it had one. A reset that fails (the store
        away) keeps the memory copy, unless it was dropped meanwhile."""
        while True:
            with self._lock:
                busy = self._resetting.get(channel_id)
                if busy is None:
                    had = self._channels.pop(channel_id, None)
                    self._stale(channel_id)  # a read in flight may hold rows deleted below
                    resetting = self._resetting[channel_id] = _Reading()
                    break
            busy.done.wait()  # another reset of it first
        try:
            if had is None:
                self._settle(channel_id)
                return self._delete(channel_id)
            with had.lock:  # let an Inject in flight on this channel finish first
                self._settle(channel_id)
                return self._delete(channel_id)
        except BaseException:
            if had is not None:
                with self._lock:  # no other copy is read while it resets
                    if not resetting.stale:
                        self._channels[channel_id] = had
            raise
        finally:
            with self._lock:
                del self._resetting[channel_id]
            resetting.done.set()

    def _delete(self, channel_id: str) -> bool:
        """Delete the channel's rows with its commits kept for a store away (written after
        the delete, they would bring the old conversation back); whether it had any. None
        of its commits can be kept meanwhile: a reset holds the channel's calls."""
        with self._deferred_lock:
            with self._kept_lock:
                kept = any(k.channel_id == channel_id for k in self._deferred)
            if kept:
                # held over the delete: the catch-up writes none of them meanwhile
                existed = self.repo.delete(channel_id)
                with self._kept_lock:
                    return bool(self._undefer(channel_id)) or existed
        return self.repo.delete(channel_id)

    def close(self) -> None:
        """Write everything still queued."""
        self._catch_up.close()
        self._send()
        self.writer.close()
        if self._deferred or self._promised:
            try:
                self._reconcile()
            except Unavailable:
                pass
        if self._deferred or self._promised:  # the store away, or claims never settled
            log.warning("shared store away at stop: channel state commits not written",
                        extra={"deferred": len(self._deferred),
                               "promised": len(self._promised)})


def _named(saved: Saved) -> set[str]:
    """The memory ids a kept commit's merge writes (its ids, buffer rows, focus votes)."""
    votes = () if saved.asked is None else saved.asked.votes + saved.asked.reply_votes
    return ({r.memory_id for r in saved.injected} | {r.memory_id for r in saved.buffer}
            | {m for m, _ in votes})


def _without(saved: Saved, erased: set[str]) -> Saved:
    """``saved`` without its rows and votes naming ``erased`` memories."""
    if not erased:
        return saved
    asked = saved.asked
    if asked is not None:
        asked = replace(asked, votes=tuple(v for v in asked.votes if v[0] not in erased),
                        reply_votes=tuple(v for v in asked.reply_votes if v[0] not in erased))
    return replace(saved, injected=[r for r in saved.injected if r.memory_id not in erased],
                   buffer=[r for r in saved.buffer if r.memory_id not in erased], asked=asked)


def rows_of(state: ChannelState, entry: Committed, pruned: bool,
            before: ChannelState | None = None) -> Saved:
    """The rows of ``entry`` once ``state`` recorded it (``pruned``: it dropped blocks).
    ``before``: the state as it was (what the store holds when only this sidecar writes
    it): the rows the commit drops are named one by one, else the store works them out."""
    injected = [InjectedRow(m, entry.turn, v, entry.at_us)
                for m, v in zip(entry.ids, entry.versions, strict=True)]
    dropped = None
    if before is not None:
        kept = {r.turn for r in state.recent}
        dropped = Dropped(context=tuple(r.turn for r in before.recent if r.turn not in kept))
        if pruned:
            injected, dropped = _pruned(before, state, entry, dropped.context)
    return Saved(
        turn=entry.turn, injected=injected,
        buffer=[BufferRow(m, entry.turn, entry.embeddings[i]) for i, m in enumerate(entry.ids)],
        block=(entry.turn, entry.digest) if entry.ids else None,
        reply=replies.to_json(entry.reply), keep=state.keep,
        held=frozenset(b.turn for b in state.blocks) if pruned else None,
        asked=entry.asked, speaker=entry.speaker, dropped=dropped,
    )


def _pruned(before: ChannelState, state: ChannelState, entry: Committed,
            context: tuple[int, ...]) -> tuple[list[InjectedRow], Dropped]:
    """A commit that dropped blocks, as ``ChannelState.retain`` did it: the id rows to
    write (the turn's, and those re-pointed to an earlier held block) and the rows gone."""
    # ``record`` makes a new record for each id it changes and keeps the others as they were
    # (``before`` shares them): an id whose record is not the same object was written.
    injected = [InjectedRow(m, s.turn, s.version, s.at_us)
                for m, s in state.injected.items() if before.injected.get(m) is not s]
    ids = tuple(m for m in before.injected if m not in state.injected)
    held = {b.turn for b in state.blocks}
    turns = [b.turn for b in before.blocks] + ([entry.turn] if entry.ids else [])
    gone = tuple(t for t in turns if t not in held)
    rows = sum(1 for t in before.buffer_turns if t in held) + (
        len(entry.ids) if entry.turn in held else 0)
    return injected, Dropped(ids=ids, turns=gone, oldest=rows - len(state.buffer_turns),
                             context=context)


def _restore(state: ChannelState, saved: SavedChannel, fetch: replies.Fetch) -> None:
    state.turn, state.keep = saved.turn, saved.keep
    state.injected = {r.memory_id: Injected(turn=r.turn, version=r.version, at_us=r.at_us)
                      for r in saved.injected}
    state.blocks = [Block(turn, digest) for turn, digest in saved.blocks]
    state.recent = list(saved.recent)
    state.speakers = saved.speakers
    if saved.reply is not None:
        reply = saved.reply
        state.stored_reply = lambda: replies.from_json(reply, fetch)
    if saved.buffer:
        state.buffer = np.vstack([r.embedding for r in saved.buffer]).astype(np.float32)
        state.buffer_ids = [r.memory_id for r in saved.buffer]
        state.buffer_turns = [r.turn for r in saved.buffer]
