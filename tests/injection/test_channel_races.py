"""A channel's copy against a reset, a drop or an eviction between a call's ``get`` and its
lock, and a reset against commits kept for a shared store away: a reset leaves nothing of the
old conversation, in the store or in memory, and the memory copy stays the store's."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path

import grpc
import pytest
from memsidecar.v1 import injection_pb2 as inj

from sidecar.errors import Unavailable
from sidecar.injection.channels import ChannelStates
from sidecar.injection.state import ChannelState
from sidecar.injection.state_repo import ChosenErased, Saved, SavedChannel, StateRepo
from sidecar.records import Viewer
from sidecar.store.db import Database
from tests.injection.conftest import Serve
from tests.injection.helpers import inject, put
from tests.injection.test_channel_state import entry, fetch


class HeldGet(ChannelStates):
    """The first ``get`` of a chosen thread held after it returns, until let go: the call
    preempted between reading the channel and taking its lock, made deterministic."""

    def __init__(self, db: Database) -> None:
        super().__init__(StateRepo(db), fetch(db))
        self.thread: threading.Thread | None = None
        self.got, self.go = threading.Event(), threading.Event()

    def get(self, channel_id: str) -> ChannelState:
        state = super().get(channel_id)
        if threading.current_thread() is self.thread and not self.got.is_set():
            self.got.set()
            assert self.go.wait(30)
        return state


def held_call(states: HeldGet, call: threading.Thread) -> None:
    """Start ``call`` and wait until it holds the channel, not its lock."""
    states.thread = call
    call.start()
    assert states.got.wait(30)


def stored(db: Database, channel_id: str) -> ChannelState:
    return ChannelStates(StateRepo(db), fetch(db)).get(channel_id)


def test_a_view_of_a_copy_reset_meanwhile_is_taken_on_the_new_conversation(
        tmp_path: Path) -> None:
    """A PruneHistory held between the read of the channel and its lock while the channel is
    reset and its next turn committed: its view applies to the new copy, so SQLite and the
    memory copy hold the same blocks (a view of the old copy deleted the new turn's rows)."""
    db = Database(tmp_path / "s.sqlite3")
    states = HeldGet(db)
    for turn in (5, 6, 7):  # the old conversation
        states.commit(states.get("c"), entry(turn, [f"old{turn}"]), keep=3, depth=10)
    gone: list[list[int]] = []
    observe = threading.Thread(target=lambda: gone.append(states.observe("c", {"d7"}, 3)),
                               daemon=True)
    held_call(states, observe)
    assert states.reset("c")
    new = states.get("c")
    assert new.turn == 0
    with new.lock:
        states.commit(new, entry(1, ["fresh"]), keep=3, depth=10)
    states.go.set()
    observe.join(30)
    memory = states.get("c")
    disk = stored(db, "c")
    assert [b.turn for b in memory.blocks] == [b.turn for b in disk.blocks]
    assert sorted(memory.injected) == sorted(disk.injected) == []
    assert gone == [[1]] and memory.turn == disk.turn == 1
    db.close()


def test_a_copy_evicted_before_its_lock_is_read_again(tmp_path: Path) -> None:
    """A call held between ``get`` and the lock while its channel is evicted and read again
    by another call that commits: it works on that copy, never on a second one."""
    db = Database(tmp_path / "s.sqlite3")
    states = HeldGet(db)
    states.max_cached = 1
    states.commit(states.get("c"), entry(1, ["m"]), keep=3, depth=10)
    taken: list[ChannelState] = []

    def call() -> None:
        with states.locked("c") as state:
            taken.append(state)

    first = threading.Thread(target=call, daemon=True)
    held_call(states, first)
    states.get("other")  # evicts "c"
    again = states.get("c")  # another call reads it again
    with again.lock:
        states.commit(again, entry(2, ["n"]), keep=3, depth=10)
    states.go.set()
    first.join(30)
    assert len(taken) == 1 and taken[0].turn == 2
    db.close()


def test_a_reset_between_get_and_lock_is_seen_by_the_lock(tmp_path: Path) -> None:
    db = Database(tmp_path / "s.sqlite3")
    states = HeldGet(db)
    states.commit(states.get("c"), entry(1, ["m"]), keep=3, depth=10)
    taken: list[ChannelState] = []

    def call() -> None:
        with states.locked("c") as state:
            taken.append(state)
            states.commit(state, entry(state.turn + 1, ["n"]), keep=3, depth=10)

    held = threading.Thread(target=call, daemon=True)
    held_call(states, held)
    assert states.reset("c")
    states.go.set()
    held.join(30)
    assert len(taken) == 1 and taken[0].turn == 1  # the new conversation's first turn
    assert stored(db, "c").turn == 1 and list(stored(db, "c").injected) == ["n"]
    db.close()


def test_an_inject_held_before_its_lock_during_a_reset_is_the_new_conversation(
        serve: Serve) -> None:
    """An Inject that read the channel, then was held while ResetChannel went through: it is
    turn 1 of the new conversation, and nothing of the old one comes back (it was turn 4,
    written over the reset, and the next Inject turn 5)."""
    live = serve()
    put(live, "We chose PostgreSQL 16 as the main database for the billing service.")
    for turn in (1, 2, 3):
        inject(live, "Which database does the billing service use?", turn=turn)
    injector = live.server.app.injector
    prefetch = injector.retriever.prefetch
    got, go = threading.Event(), threading.Event()

    def held_prefetch(viewer: Viewer) -> int:  # between the read of the channel and its lock
        if not got.is_set():
            got.set()
            assert go.wait(30)
        return prefetch(viewer)

    injector.retriever.prefetch = held_prefetch  # type: ignore[method-assign]
    replies: list[inj.InjectResponse] = []
    call = threading.Thread(target=lambda: replies.append(
        inject(live, "Where does the office cat sleep?")), daemon=True)
    call.start()
    assert got.wait(30)
    assert live.injection.ResetChannel(inj.ResetChannelRequest(channel_id="c1")).existed
    go.set()
    call.join(30)
    assert [r.turn for r in replies] == [1]
    assert inject(live, "And the billing database?").turn == 2
    live.close()
    assert inject(serve(), "And the billing database?").turn == 3


class Away(StateRepo):
    """A shared store that goes away and comes back (SQLite cannot be made to: the failure
    is raised here)."""

    away = False
    deleting: Callable[[], None] = staticmethod(lambda: None)

    def _check(self) -> None:
        if self.away:
            raise Unavailable("store away")

    def load(self, channel_id: str) -> SavedChannel | None:
        self._check()
        return super().load(channel_id)

    def save(self, channel_id: str, saved: Saved, expect: int | None = None) -> None:
        self._check()
        super().save(channel_id, saved, expect)

    def merge(self, channel_id: str, saved: Saved,
              check: tuple[str, tuple[object, ...]] | None = None,
              guard: Callable[[], None] | None = None) -> None:
        self._check()
        super().merge(channel_id, saved, check, guard)

    def delete(self, channel_id: str) -> bool:
        self.deleting()
        self._check()
        return super().delete(channel_id)


def kept_through_an_outage(tmp_path: Path) -> tuple[Database, Away, ChannelStates]:
    """A shared store with channels "c" and "other" at turn 1, then away while "c" commits
    turn 2 (kept here); back. What waits is written by the next commit, not by a
    background thread."""
    db = Database(tmp_path / "s.sqlite3")
    repo = Away(db)
    states = ChannelStates(repo, fetch(db), shared=True)
    states._catch_up.close()
    for name in ("c", "other"):
        with (state := states.get(name)).lock:
            states.commit(state, entry(1, [f"m-{name}"]), keep=3, depth=10)
    repo.away = True
    with (state := states.get("c")).lock:
        states.commit(state, entry(2, ["kept"]), keep=3, depth=10)
    assert states.deferred == 1
    return db, repo, states


def write_waiting(states: ChannelStates) -> None:
    with (other := states.get("other")).lock:  # a commit writes what waits first
        states.commit(other, entry(2, ["m2"]), keep=3, depth=10)


def test_a_reset_drops_the_commits_kept_for_a_store_away(tmp_path: Path) -> None:
    """Turns served while the shared store was away, then the channel reset once it is
    back: its kept commits are not written after the reset, nor kept in memory."""
    db, repo, states = kept_through_an_outage(tmp_path)
    repo.away = False
    assert states.reset("c")
    assert states.deferred == 0  # nothing of the old conversation kept here
    write_waiting(states)
    assert stored(db, "c").turn == 0
    assert not db.execute("SELECT 1 FROM injection_ids WHERE channel_id = 'c'")
    assert states.get("c").turn == 0
    db.close()


def test_a_failed_reset_keeps_the_commits_kept_for_a_store_away(tmp_path: Path) -> None:
    db, repo, states = kept_through_an_outage(tmp_path)
    with pytest.raises(Unavailable):
        states.reset("c")
    assert states.deferred == 1  # a failed call changes nothing
    repo.away = False
    write_waiting(states)
    assert stored(db, "c").turn == 2
    db.close()


def test_a_failed_reset_keeps_the_memory_copy(tmp_path: Path) -> None:
    """A reset refused by a shared store away changes nothing: a retry of the last turn
    still finds its committed turn (a lost copy was read again as an empty state, and the
    retry built a new turn 2)."""
    db, repo, states = kept_through_an_outage(tmp_path)
    state = states.get("c")
    for _ in range(2):
        with pytest.raises(Unavailable):
            states.reset("c")
        kept = states.get("c")
        assert kept is state and kept.turn == 2 and "kept" in kept.injected
    repo.deleting = lambda: states.drop("c")  # e.g. an erasure blanked its saved reply
    with pytest.raises(Unavailable):
        states.reset("c")
    assert states.get("c").turn == 0  # not put back: the store away, an empty copy serves
    db.close()


def test_a_read_that_fails_during_a_reset_leaves_nothing_behind(tmp_path: Path) -> None:
    """A read held, the channel reset meanwhile, then the read fails: its caller gets the
    error, the calls that waited for it and the reset go on, and no entry is left."""
    db = Database(tmp_path / "s.sqlite3")
    ChannelStates(StateRepo(db), fetch(db)).commit(
        ChannelStates(StateRepo(db), fetch(db)).get("c"), entry(1, ["m"]), keep=3, depth=10)

    class FailingHeld(StateRepo):
        reading, go = threading.Event(), threading.Event()
        failed = False

        def load(self, channel_id: str) -> SavedChannel | None:
            if not self.failed:
                self.failed = True
                self.reading.set()
                assert self.go.wait(30)
                raise OSError("disk away")
            return super().load(channel_id)

    repo = FailingHeld(db)
    states = ChannelStates(repo, fetch(db))
    errors: list[BaseException] = []

    def first() -> None:
        try:
            states.get("c")
        except OSError as err:
            errors.append(err)

    reader = threading.Thread(target=first, daemon=True)
    reader.start()
    assert repo.reading.wait(30)
    got: list[ChannelState] = []
    waiter = threading.Thread(target=lambda: got.append(states.get("c")), daemon=True)
    waiter.start()
    assert states.reset("c")
    repo.go.set()
    reader.join(30)
    waiter.join(30)
    assert [str(e) for e in errors] == ["disk away"]
    assert len(got) == 1 and got[0].turn == 0 and states.get("c") is got[0]
    assert not states._reading and not states._resetting
    db.close()


def test_a_turn_whose_memories_keep_being_erased_while_the_feed_is_away_says_so(
        serve: Serve) -> None:
    """A failure that cannot be produced on one machine at will (another sidecar erasing each
    memory a turn chooses, while the change feed cannot be read): the turn is built
    ``MOVED_ATTEMPTS`` times, then UNAVAILABLE names the erasures, not other sidecars'
    commits of the channel."""
    live = serve()
    put(live, "We chose PostgreSQL 16 as the main database for the billing service.")
    injector = live.server.app.injector

    def always_erased(*_: object) -> None:
        raise ChosenErased("a memory of the turn was erased while it was built")

    def feed_away() -> None:
        raise Unavailable("the store is away")

    injector._inject = always_erased  # type: ignore[method-assign]
    injector.follow_erasures = feed_away
    with pytest.raises(grpc.RpcError) as failed:
        inject(live, "Which database does the billing service use?")
    assert failed.value.code() == grpc.StatusCode.UNAVAILABLE
    assert "erased for good" in failed.value.details()
    assert "other sidecars" not in failed.value.details()
