"""A commit names the rows it drops one by one (``Saved.dropped``): the store then holds
exactly the memory copy, and the same id, buffer and block rows as the store-side prune
(``Saved.held``, the shared store's path) leaves."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest

from bench.pg_trips import round_trips
from sidecar.capture.repo import CaptureRepo, Pending
from sidecar.conversation.query_context import RecentTurn
from sidecar.injection import state as state_module
from sidecar.injection import state_repo
from sidecar.injection.channels import ChannelStates, rows_of
from sidecar.injection.state import ChannelState, Committed
from sidecar.injection.state_repo import Dropped, SavedChannel, StateRepo
from sidecar.injection.types import Injection, InjectStats
from sidecar.store.db import Database
from sidecar.store.postgres.db import PgDatabase
from sidecar.store.write_behind import WriteThrough

SMALL_BUFFER = 7  # small enough that the bound drops rows of held blocks too


def unit(rng: np.random.Generator, n: int) -> np.ndarray:
    x = rng.standard_normal((n, 384)).astype(np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def committed(turn: int, pick: random.Random, rng: np.random.Generator) -> Committed:
    ids = pick.sample([f"m{i}" for i in range(9)], pick.choice((0, 1, 2, 3)))
    reply = Injection(block=f"block {turn}" if ids else "", items=[], stats=InjectStats(),
                      skip_reason="", turn=turn)
    text = pick.choice(("", "where was the trip", "and the hotel?"))
    asked = None if pick.random() < 0.2 else RecentTurn(
        turn, text, unit(rng, 1)[0] if text else np.zeros(384, np.float32),
        votes=tuple((m, 0.5) for m in ids))
    return Committed(turn=turn, ids=ids, versions=[turn] * len(ids),
                     embeddings=unit(rng, len(ids)), digest=f"d{turn}" if ids else "",
                     reply=reply, at_us=turn * 1000, asked=asked,
                     speaker="u" if turn == 1 else None)


def rows(saved: SavedChannel | None) -> tuple[object, ...]:
    assert saved is not None
    return (saved.turn, sorted((r.memory_id, r.turn, r.version, r.at_us) for r in saved.injected),
            [(r.memory_id, r.turn) for r in saved.buffer],
            np.vstack([r.embedding for r in saved.buffer]).tobytes() if saved.buffer else b"",
            saved.blocks)


def memory_rows(state: ChannelState) -> tuple[object, ...]:
    return (state.turn, sorted((m, s.turn, s.version, s.at_us) for m, s in state.injected.items()),
            list(zip(state.buffer_ids, state.buffer_turns, strict=True)),
            state.buffer.tobytes() if state.buffer_turns else b"",
            [(b.turn, b.digest) for b in state.blocks])


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("keep", [None, 0, 1, 3])
def test_named_drops_leave_the_store_as_the_memory_copy_and_the_store_side_prune(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, seed: int, keep: int | None) -> None:
    monkeypatch.setattr(state_module, "BUFFER_MAX", SMALL_BUFFER)
    monkeypatch.setattr(state_repo, "BUFFER_MAX", SMALL_BUFFER)
    exact_db, held_db = Database(tmp_path / "exact.db"), Database(tmp_path / "held.db")
    try:
        states = ChannelStates(StateRepo(exact_db), lambda ids: {})
        reference = StateRepo(held_db)
        pick, rng = random.Random(seed), np.random.default_rng(seed)
        mirror = ChannelState("c")  # the same turns, written the store-side way
        for turn in range(1, 40):
            entry = committed(turn, pick, rng)
            state = states.get("c")
            with state.lock:
                states.commit(state, entry, keep, depth=3)
            with held_db.transaction():
                reference.save("c", rows_of(mirror, entry, mirror.record(entry, keep, 3)))
            if pick.random() < 0.15:  # a PruneHistory: the agent dropped some blocks
                held = {b.digest for b in state.blocks if pick.random() < 0.6}
                reported = pick.choice((1, 2, 3))
                states.observe("c", held, reported)
                mirror.keep = reported
                mirror.retain(frozenset(b.turn for b in mirror.blocks if b.digest in held))
                reference.save_view("c", reported, frozenset(b.turn for b in mirror.blocks))
            stored = states.repo.load("c")
            assert rows(stored) == memory_rows(state), turn
            assert rows(stored) == rows(reference.load("c")), turn
            assert stored is not None
            assert [(r.turn, r.text) for r in stored.recent] == \
                [(r.turn, r.text) for r in state.recent], turn
    finally:
        exact_db.close()
        held_db.close()


def test_a_commit_that_drops_nothing_names_nothing() -> None:
    state = ChannelState("c")
    before = state.copy()
    entry = Committed(turn=1, ids=["a"], versions=[1], embeddings=np.ones((1, 384), np.float32),
                      digest="d1", reply=Injection("b", [], InjectStats(), "", 1), at_us=5)
    saved = rows_of(state, entry, state.record(entry, keep=3, depth=10), before)
    assert saved.dropped == Dropped() and not saved.dropped
    assert [(r.memory_id, r.turn) for r in saved.injected] == [("a", 1)]


def test_a_shared_commit_with_its_durable_write_is_one_round_trip(pg_dsn: str) -> None:
    """On PostgreSQL the turn's rows, its compare-and-swap and a capture's pending row go
    in one batch: one request answered on the calling thread (and before it, the first time
    its connection sees one of its statement texts, one that prepares them)."""
    db = PgDatabase(pg_dsn)
    try:
        states = ChannelStates(StateRepo(db), lambda ids: {}, WriteThrough(db), shared=True)
        captures = CaptureRepo(db)
        pick, rng = random.Random(3), np.random.default_rng(3)
        state = states.get("c")
        with round_trips() as answered:
            for turn in range(1, 6):
                entry = committed(turn, pick, rng)
                row = Pending("c", f"k{turn}", "a", "user", turn, "said", "", turn,
                              f"m-{turn}", None)

                def durable(row: Pending = row) -> None:
                    with db.transaction():  # as Capture writes it: a block of its own
                        captures.put(row)

                before, prepared = answered(), db.prepared.preparations
                with state.lock:
                    states.commit(state, entry, 3, 3, durable=durable)
                preparations = db.prepared.preparations - prepared
                assert answered() - before - preparations == 1 and preparations <= 1, turn
        assert [p.key for p in captures.pending(10)] == [f"k{t}" for t in range(1, 6)]
        stored = states.repo.load("c")
        assert stored is not None and stored.turn == 5
        assert rows(stored) == memory_rows(state)
    finally:
        db.close()


def test_a_durable_write_the_server_refuses_never_costs_the_turn(pg_dsn: str) -> None:
    """The batch fails as a whole; the turn is written again with the durable write in a
    savepoint of its own, whose failure (caught, as Capture's is) leaves the turn."""
    db = PgDatabase(pg_dsn)
    try:
        states = ChannelStates(StateRepo(db), lambda ids: {}, WriteThrough(db), shared=True)
        refused: list[str] = []

        def durable() -> None:
            try:
                with db.transaction():
                    db.execute("INSERT INTO no_such_table (x) VALUES (?)", (1,))
            except Exception as err:  # noqa: BLE001 (as Capture._add: the turn goes on)
                refused.append(type(err).__name__)

        pick, rng = random.Random(5), np.random.default_rng(5)
        state = states.get("c")
        for turn in (1, 2):
            with state.lock:
                states.commit(state, committed(turn, pick, rng), 3, 3, durable=durable)
        assert refused == ["UndefinedTable", "UndefinedTable"]  # once a turn, when apart
        stored = states.repo.load("c")
        assert stored is not None and stored.turn == 2
        assert rows(stored) == memory_rows(state)
    finally:
        db.close()
