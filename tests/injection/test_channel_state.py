"""Channel state: cooldown window, buffer pruning and bound, SQLite round trip."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from sidecar.injection.state import BUFFER_MAX, ChannelState, ChannelStates
from sidecar.injection.state_repo import StateRepo
from sidecar.store.db import Database
from sidecar.store.write_behind import Job


def unit(n: int, seed: int = 0) -> np.ndarray:
    x = np.random.default_rng(seed).standard_normal((n, 384)).astype(np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def test_cooldown_boundary() -> None:
    state = ChannelState("c")
    state.record(["a"], [1], unit(1), turn=1, now_us=5, depth=10)
    assert state.in_cooldown("a", 10, 10) is not None
    assert state.in_cooldown("a", 11, 10) is not None
    assert state.in_cooldown("a", 12, 10) is None
    assert state.in_cooldown("b", 2, 10) is None


def test_buffer_pruned_by_age_and_bounded() -> None:
    state = ChannelState("c")
    state.record(["a", "b"], [1, 1], unit(2), turn=1, now_us=0, depth=3)
    state.record(["c"], [1], unit(1, 1), turn=3, now_us=0, depth=3)
    assert state.live_buffer(4, 3).shape[0] == 3
    assert state.live_buffer(5, 3).shape[0] == 1
    state.record(["d"], [1], unit(1, 2), turn=5, now_us=0, depth=3)
    assert state.buffer_ids == ["c", "d"] and set(state.injected) == {"c", "d"}
    many = [f"m{i}" for i in range(BUFFER_MAX + 10)]
    state.record(many, [1] * len(many), unit(len(many), 3), turn=6, now_us=0, depth=3)
    assert len(state.buffer_ids) == BUFFER_MAX == state.buffer.shape[0]
    assert state.buffer_ids[-1] == many[-1]


def test_round_trip_through_sqlite(tmp_path: Path) -> None:
    db = Database(tmp_path / "s.sqlite3")
    states = ChannelStates(StateRepo(db))
    state = states.get("c")
    state.turn = 1
    vectors = unit(2)
    states.commit(state, ["a", "b"], [1, 3], vectors, now_us=77, depth=10)
    state.turn = 2
    states.commit(state, [], [], np.zeros((0, 384), np.float32), now_us=78, depth=10)
    db.close()
    db = Database(tmp_path / "s.sqlite3")
    loaded = ChannelStates(StateRepo(db)).get("c")
    assert loaded.turn == 2 and loaded.buffer_ids == ["a", "b"]
    assert loaded.injected["b"].version == 3 and loaded.injected["b"].at_us == 77
    np.testing.assert_array_equal(loaded.buffer, vectors)
    # old rows are pruned in SQLite as in memory
    loaded.turn = 20
    ChannelStates(StateRepo(db)).commit(loaded, ["z"], [1], unit(1, 9), now_us=1, depth=10)
    again = ChannelStates(StateRepo(db)).get("c")
    assert again.buffer_ids == ["z"] and set(again.injected) == {"z"}
    assert ChannelStates(StateRepo(db)).reset("c")
    assert ChannelStates(StateRepo(db)).get("c").turn == 0
    db.close()


def test_cache_evicts_least_recent_and_reloads(tmp_path: Path) -> None:
    db = Database(tmp_path / "s.sqlite3")
    states = ChannelStates(StateRepo(db), max_cached=2)
    for name in ("a", "b", "c"):
        state = states.get(name)
        state.turn = 5
        states.commit(state, [f"m-{name}"], [1], unit(1), now_us=1, depth=10)
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


def test_reads_of_sqlite_wait_for_queued_writes(tmp_path: Path) -> None:
    """A channel reloaded (after eviction) or reset sees the writes still queued."""
    db = Database(tmp_path / "s.sqlite3")
    writer = HeldWriter(db)
    states = ChannelStates(StateRepo(db), writer, max_cached=1)
    state = states.get("a")
    states.get("b")  # evicts "a"
    state.turn = 3
    states.commit(state, ["m"], [1], unit(1), now_us=1, depth=10)  # queued
    assert writer.jobs and ChannelStates(StateRepo(db)).get("a").turn == 0
    states.get("c")  # a new channel has nothing queued: it does not wait for the writer
    assert len(writer.jobs) == 1
    again = states.get("a")  # flushes, then loads
    assert again.turn == 3 and again.buffer_ids == ["m"] and not writer.jobs
    states.commit(again, ["n"], [1], unit(1, 1), now_us=2, depth=10)
    assert states.reset("a")  # the queued write lands before the delete, not after it
    assert not writer.jobs
    assert not db.execute("SELECT 1 FROM injection_ids WHERE channel_id = 'a'")
    assert ChannelStates(StateRepo(db)).get("a").turn == 0
    db.close()
