"""The store contract, channel state and ownership: one suite, run on SQLite and PostgreSQL."""

from __future__ import annotations

import contextlib
import random

import numpy as np
import pytest

from sidecar.errors import PermissionDenied
from sidecar.injection.owners import ChannelOwners
from sidecar.injection.state_repo import StateRepo
from sidecar.store.contract import SqlStore
from tests.store.contract_data import saved_turn, vector


def test_state_save_load_retain_delete(store_db: SqlStore) -> None:
    repo = StateRepo(store_db)
    assert repo.load("c") is None
    repo.save("c", saved_turn(1, ["a", "b"]))
    repo.save("c", saved_turn(2, ["b", "c"]))
    loaded = repo.load("c")
    assert loaded is not None and loaded.turn == 2 and loaded.reply == {"turn": 2}
    assert {(r.memory_id, r.turn) for r in loaded.injected} == {("a", 1), ("b", 2), ("c", 2)}
    assert [r.memory_id for r in loaded.buffer] == ["a", "b", "b", "c"]
    np.testing.assert_array_equal(loaded.buffer[0].embedding, vector(1))
    assert loaded.blocks == [(1, "digest1"), (2, "digest2")]
    repo.save_view("c", 3, frozenset({1}))  # only turn 1's block is still held
    held = repo.load("c")
    assert held is not None and held.keep == 3 and held.blocks == [(1, "digest1")]
    assert {(r.memory_id, r.turn) for r in held.injected} == {("a", 1), ("b", 1)}
    repo.save("c", saved_turn(3, ["d"], held=frozenset({3})))  # no earlier block held
    only = repo.load("c")
    assert only is not None and [r.memory_id for r in only.injected] == ["d"]
    assert repo.delete("c") and not repo.delete("c") and repo.load("c") is None


def test_owners_claim_check_release_and_idle(store_db: SqlStore) -> None:
    owners = ChannelOwners(store_db)
    assert owners.claim("c", "agent")
    assert not owners.claim("c", "agent")
    with pytest.raises(PermissionDenied):
        owners.claim("c", "other")
    with pytest.raises(PermissionDenied):
        owners.check("c", "")
    owners.check("free", "anyone")
    StateRepo(store_db).save("orphan", saved_turn(1, ["a"]))  # state with no owner row
    assert set(owners.idle_since(2**62)) == {"c", "orphan"}
    assert owners.idle_since(0) == []
    owners.release("c")
    assert owners.claim("c", "other")


def test_owners_check_answers_as_the_stored_owner(store_db: SqlStore) -> None:
    """``check`` answers from the owners this process claimed channels for (SQLite) as a
    read of the store does, through claims, refusals and releases."""
    owners, reader = ChannelOwners(store_db), ChannelOwners(store_db)  # reader: no claims
    rng = random.Random(3)
    for _ in range(300):
        channel, agent = rng.choice(("c0", "c1", "c2")), rng.choice(("a", "b", ""))
        step = rng.randrange(3)
        if step == 0:
            with contextlib.suppress(PermissionDenied):
                owners.claim(channel, agent)
        elif step == 1:
            owners.release(channel)
        for asking in ("a", "b", ""):
            verdicts = []
            for who in (owners, reader):
                try:
                    who.check(channel, asking)
                    verdicts.append(True)
                except PermissionDenied:
                    verdicts.append(False)
            assert verdicts[0] == verdicts[1], (channel, asking)
