"""Channel state: the blocks in view, retention, the buffer bound, SQLite round trip."""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import pytest

from sidecar import after_reply
from sidecar.injection.channels import ChannelStates
from sidecar.injection.replies import Fetch
from sidecar.injection.state import BUFFER_MAX, ChannelState, Committed
from sidecar.injection.state_repo import SavedChannel, StateRepo
from sidecar.injection.types import Injection, InjectStats
from sidecar.records import Memory
from sidecar.store.db import Database
from sidecar.store.repos import Repositories
from sidecar.store.write_behind import Job


def fetch(db: Database) -> Fetch:
    return Repositories.open(db).memories.get_many


def unit(n: int, seed: int = 0) -> np.ndarray:
    x = np.random.default_rng(seed).standard_normal((n, 384)).astype(np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def entry(turn: int, ids: list[str], seed: int = 0, at_us: int = 0,
          versions: list[int] | None = None) -> Committed:
    block = f"block {turn}" if ids else ""
    reply = Injection(block=block, items=[], stats=InjectStats(), skip_reason="", turn=turn)
    return Committed(turn=turn, ids=ids, versions=versions or [1] * len(ids),
                     embeddings=unit(len(ids), seed), digest=f"d{turn}" if ids else "",
                     reply=reply, at_us=at_us)


def test_view_is_the_keep_minus_one_latest_non_empty_blocks() -> None:
    state = ChannelState("c")
    for turn, ids in ((1, ["a"]), (2, ["b"]), (3, []), (4, ["c"]), (5, [])):
        state.record(entry(turn, ids), keep=3, depth=10)
    view = state.view(6, keep=3, depth=10)
    assert view == {2, 4}  # the empty turns 3 and 5 hold no slot
    assert state.in_view("a", view) is None and state.in_view("b", view) is not None
    assert [b.turn for b in state.blocks] == [1, 2, 4]  # held; block 1 goes at the next prune
    assert state.view_buffer(view).shape[0] == 2
    state.record(entry(6, ["d"]), keep=3, depth=10)
    assert [b.turn for b in state.blocks] == [2, 4, 6] and "a" not in state.injected
    assert state.view(6, keep=1, depth=10) == set() == state.view(6, keep=0, depth=10)


def test_unbounded_keep_follows_depth() -> None:
    state = ChannelState("c")
    state.record(entry(1, ["a"]), keep=None, depth=10)
    assert state.in_view("a", state.view(11, keep=None, depth=10)) is not None
    assert state.in_view("a", state.view(12, keep=None, depth=10)) is None


def test_reported_keep_overrides_the_config() -> None:
    state = ChannelState("c")
    for turn in range(1, 6):
        state.record(entry(turn, [f"m{turn}"]), keep=2, depth=10)
    assert [b.turn for b in state.blocks] == [4, 5]
    state.keep = 4  # the agent said it keeps four
    state.record(entry(6, ["m6"]), keep=2, depth=10)
    state.record(entry(7, ["m7"]), keep=2, depth=10)
    assert state.view(8, keep=2, depth=10) == {5, 6, 7}


def test_id_carried_by_an_earlier_held_block_stays_in_view() -> None:
    state = ChannelState("c")
    state.record(entry(1, ["a"]), keep=5, depth=10)
    state.record(entry(2, ["a", "b"]), keep=5, depth=10)
    state.retain(frozenset({1}))  # the agent dropped block 2 only
    assert state.injected["a"].turn == 1 and "b" not in state.injected
    assert state.buffer_ids == ["a"]


def test_buffer_bounded() -> None:
    state = ChannelState("c")
    many = [f"m{i}" for i in range(BUFFER_MAX + 10)]
    state.record(entry(1, many, 3), keep=3, depth=10)
    assert len(state.buffer_ids) == BUFFER_MAX == state.buffer.shape[0]
    assert state.buffer_ids[-1] == many[-1]


def test_round_trip_through_sqlite(tmp_path: Path) -> None:
    db = Database(tmp_path / "s.sqlite3")
    states = ChannelStates(StateRepo(db), fetch(db))
    state = states.get("c")
    first = entry(1, ["a", "b"], at_us=77, versions=[1, 3])
    states.commit(state, first, keep=3, depth=10)
    states.commit(state, entry(2, []), keep=3, depth=10)
    db.close()
    db = Database(tmp_path / "s.sqlite3")
    asked: list[list[str]] = []

    def counted(ids: Sequence[str]) -> Mapping[str, Memory]:
        asked.append(list(ids))
        return fetch(db)(ids)

    loaded = ChannelStates(StateRepo(db), counted).get("c")
    assert loaded.turn == 2 and loaded.buffer_ids == ["a", "b"]
    assert loaded.injected["b"].version == 3 and loaded.injected["b"].at_us == 77
    assert [(b.turn, b.digest) for b in loaded.blocks] == [(1, "d1")]
    assert asked == []  # the reply's memories are read on a retry, not with the channel
    reply = loaded.reply()
    assert reply is not None and reply.turn == 2 and len(asked) == 1
    assert loaded.reply() is reply and len(asked) == 1
    np.testing.assert_array_equal(loaded.buffer, first.embeddings)
    # blocks that fell out are pruned in SQLite as in memory
    states = ChannelStates(StateRepo(db), fetch(db))
    for turn in (3, 4, 5):
        states.commit(loaded, entry(turn, [f"z{turn}"], turn), keep=2, depth=10)
    again = ChannelStates(StateRepo(db), fetch(db)).get("c")
    assert again.buffer_ids == ["z4", "z5"] and set(again.injected) == {"z4", "z5"}
    last = again.reply()
    assert [b.turn for b in again.blocks] == [4, 5] and last is not None
    assert last.block == "block 5"
    assert states.observe("c", {"d5"}, keep=4) == [4]
    reported = ChannelStates(StateRepo(db), fetch(db)).get("c")
    assert reported.keep == 4 and [b.turn for b in reported.blocks] == [5]
    assert ChannelStates(StateRepo(db), fetch(db)).reset("c")
    assert ChannelStates(StateRepo(db), fetch(db)).get("c").turn == 0
    db.close()


def test_cache_evicts_least_recent_and_reloads(tmp_path: Path) -> None:
    db = Database(tmp_path / "s.sqlite3")
    states = ChannelStates(StateRepo(db), fetch(db), max_cached=2)
    for name in ("a", "b", "c"):
        states.commit(states.get(name), entry(5, [f"m-{name}"]), keep=3, depth=10)
    assert list(states._channels) == ["b", "c"]
    again = states.get("a")  # reloaded from SQLite
    assert again.turn == 5 and again.buffer_ids == ["m-a"] and "m-a" in again.injected
    db.close()


class HeldWriter:
    """A writer whose jobs wait until flushed: a slow disk, made deterministic."""

    def __init__(self, db: Database) -> None:
        self.db = db
        self.jobs: list[Job] = []

    def submit(self, job: Job) -> None:
        self.jobs.append(job)

    def flush(self) -> None:
        while self.jobs:
            with self.db.transaction():
                self.jobs.pop(0)()

    def close(self) -> None:
        self.flush()


def test_a_commit_is_in_sqlite_when_it_returns(tmp_path: Path) -> None:
    """A turn's commit is written before ``commit`` returns (a kill -9 after the reply keeps
    it), after the PruneHistory views queued before it; reloads and resets wait for them."""
    db = Database(tmp_path / "s.sqlite3")
    writer = HeldWriter(db)
    states = ChannelStates(StateRepo(db), fetch(db), writer, max_cached=1)
    state = states.get("a")
    states.commit(state, entry(3, ["m"]), keep=3, depth=10)
    assert not writer.jobs and ChannelStates(StateRepo(db), fetch(db)).get("a").turn == 3
    states.observe("a", set(), keep=2)  # the agent no longer holds block 3: queued
    assert len(writer.jobs) == 1
    assert [b.turn for b in ChannelStates(StateRepo(db), fetch(db)).get("a").blocks] == [3]
    states.commit(state, entry(4, ["n"], 1), keep=3, depth=10)  # the view lands first
    assert not writer.jobs
    loaded = ChannelStates(StateRepo(db), fetch(db)).get("a")
    assert loaded.turn == 4 and [b.turn for b in loaded.blocks] == [4] and loaded.keep == 2
    states.observe("a", set(), keep=2)  # queued again
    states.get("b")  # evicts "a"
    states.get("c")  # a new channel has nothing queued: it does not wait for the writer
    assert len(writer.jobs) == 1
    again = states.get("a")  # flushes, then loads
    assert again.turn == 4 and not again.blocks and not writer.jobs
    states.observe("a", set(), keep=2)
    assert states.reset("a")  # the queued write lands before the delete, not after it
    assert not writer.jobs
    assert not db.execute("SELECT 1 FROM injection_ids WHERE channel_id = 'a'")
    assert ChannelStates(StateRepo(db), fetch(db)).get("a").turn == 0
    db.close()


def test_a_failed_commit_leaves_the_memory_copy_as_it_was(tmp_path: Path) -> None:
    db = Database(tmp_path / "s.sqlite3")
    states = ChannelStates(StateRepo(db), fetch(db))
    state = states.get("a")
    states.commit(state, entry(1, ["m"]), keep=3, depth=10)

    def fail() -> None:
        raise OSError("disk full")

    try:
        states.commit(state, entry(2, ["n"], 1), keep=3, depth=10, also=fail)
    except OSError:
        pass
    else:
        raise AssertionError("the failed write was not raised")
    assert state.turn == 1 and state.buffer_ids == ["m"] and list(state.injected) == ["m"]
    assert ChannelStates(StateRepo(db), fetch(db)).get("a").turn == 1  # rolled back
    db.close()


def test_a_view_reaches_the_writer_after_the_reply_or_before_a_commit_waits(
        tmp_path: Path) -> None:
    """Inside a call the view is handed to the writer once the reply is sent
    (``after_reply``); a commit of the channel before that hands it over first, in order."""
    db = Database(tmp_path / "s.sqlite3")
    writer = HeldWriter(db)
    states = ChannelStates(StateRepo(db), fetch(db), writer)
    state = states.get("a")
    states.commit(state, entry(3, ["m"]), keep=3, depth=10)
    token, later = after_reply.bind()
    try:
        states.observe("a", set(), keep=2)  # the agent no longer holds block 3
        assert not writer.jobs  # not even queued for the writer yet
    finally:
        after_reply.unbind(token)
    after_reply.run(later)  # the reply is sent
    assert len(writer.jobs) == 1
    writer.flush()
    token, later = after_reply.bind()
    try:
        states.observe("a", {"d3"}, keep=4)
        states.commit(state, entry(4, ["n"], 1), keep=3, depth=10)  # the view lands first
    finally:
        after_reply.unbind(token)
    assert not writer.jobs
    loaded = ChannelStates(StateRepo(db), fetch(db)).get("a")
    assert loaded.turn == 4 and loaded.keep == 4 and [b.turn for b in loaded.blocks] == [4]
    after_reply.run(later)  # nothing left to hand over
    assert not writer.jobs
    db.close()


class HeldReads(StateRepo):
    """The store's reads of chosen channels held after they read, until let go: a slow
    round trip to the store, made deterministic."""

    def __init__(self, db: Database, held: set[str]) -> None:
        super().__init__(db)
        self.held = held
        self.reading = threading.Event()  # a held read has read
        self.go = threading.Event()
        self.reads: list[str] = []

    def load(self, channel_id: str) -> SavedChannel | None:
        saved = super().load(channel_id)
        self.reads.append(channel_id)
        if channel_id in self.held:
            self.reading.set()
            assert self.go.wait(30)
        return saved


def reading_thread(states: ChannelStates, channel_id: str,
                   out: list[ChannelState]) -> threading.Thread:
    thread = threading.Thread(target=lambda: out.append(states.get(channel_id)), daemon=True)
    thread.start()
    return thread


def test_a_channel_read_from_the_store_holds_no_other_channel_up(tmp_path: Path) -> None:
    db = Database(tmp_path / "s.sqlite3")
    writer = ChannelStates(StateRepo(db), fetch(db))
    for name in ("slow", "other"):
        writer.commit(writer.get(name), entry(3, [f"m-{name}"]), keep=3, depth=10)
    repo = HeldReads(db, {"slow"})
    states = ChannelStates(repo, fetch(db))
    cached = states.get("cached")
    got: list[ChannelState] = []
    slow = [reading_thread(states, "slow", got), reading_thread(states, "slow", got)]
    assert repo.reading.wait(30)
    assert states.get("cached") is cached  # held in memory: no wait
    assert states.get("other").turn == 3  # another channel's read: no wait either
    assert all(t.is_alive() for t in slow) and got == []
    repo.go.set()
    for thread in slow:
        thread.join(30)
    assert len(got) == 2 and got[0] is got[1] and got[0].turn == 3
    assert repo.reads.count("slow") == 1  # two calls, one read
    db.close()


@pytest.mark.parametrize("meanwhile", ["reset", "drop"])
def test_a_reset_or_a_drop_during_a_read_reads_again(tmp_path: Path, meanwhile: str) -> None:
    db = Database(tmp_path / "s.sqlite3")
    writer = ChannelStates(StateRepo(db), fetch(db))
    writer.commit(writer.get("c"), entry(1, ["m"]), keep=3, depth=10)
    repo = HeldReads(db, {"c"})
    states = ChannelStates(repo, fetch(db))
    got: list[ChannelState] = []
    thread = reading_thread(states, "c", got)
    assert repo.reading.wait(30)  # it read turn 1
    if meanwhile == "reset":  # the rows go while that read is in flight
        assert states.reset("c")
        expected = 0
    else:  # a newer turn, e.g. another sidecar's, and the copy forgotten
        writer.commit(writer.get("c"), entry(2, ["n"]), keep=3, depth=10)
        states.drop("c")
        expected = 2
    repo.held.clear()
    repo.go.set()
    thread.join(30)
    assert len(got) == 1 and got[0].turn == expected and repo.reads == ["c", "c"]
    assert states.get("c") is got[0]
    db.close()


def test_a_failed_read_is_tried_again_by_the_next_call(tmp_path: Path) -> None:
    db = Database(tmp_path / "s.sqlite3")
    ChannelStates(StateRepo(db), fetch(db)).get("c")

    class Failing(StateRepo):
        fail = True

        def load(self, channel_id: str) -> SavedChannel | None:
            if self.fail:
                self.fail = False
                raise RuntimeError("disk away")
            return super().load(channel_id)

    states = ChannelStates(Failing(db), fetch(db))
    with pytest.raises(RuntimeError, match="disk away"):
        states.get("c")
    assert states.get("c").turn == 0 and not states._reading
    db.close()


def test_a_reset_holds_up_only_its_own_channel(tmp_path: Path) -> None:
    db = Database(tmp_path / "s.sqlite3")

    class HeldDelete(StateRepo):
        """A reset's delete held until let go: a slow store, made deterministic."""

        deleting, go = threading.Event(), threading.Event()

        def delete(self, channel_id: str) -> bool:
            self.deleting.set()
            assert self.go.wait(30)
            return super().delete(channel_id)

    repo = HeldDelete(db)
    states = ChannelStates(repo, fetch(db))
    for name in ("a", "b", "c"):
        states.commit(states.get(name), entry(2, [f"m-{name}"]), keep=3, depth=10)
    states.drop("c")  # read from the store on its next call
    reset: list[bool] = []
    resetting = threading.Thread(target=lambda: reset.append(states.reset("a")), daemon=True)
    resetting.start()
    assert repo.deleting.wait(30)
    assert states.get("b").turn == 2 and states.get("c").turn == 2  # not held up
    got: list[ChannelState] = []
    waiting = reading_thread(states, "a", got)
    assert got == []  # its own calls wait for the reset
    repo.go.set()
    resetting.join(30)
    waiting.join(30)
    assert reset == [True] and len(got) == 1 and got[0].turn == 0 and not got[0].injected
    db.close()
