"""ResetElsewhere: the channels another sidecar reset, named by digest, leave this one's memory."""

from __future__ import annotations

import hashlib
import random
from pathlib import Path

from sidecar.injection.channels import ChannelStates
from sidecar.injection.elsewhere import ResetElsewhere
from sidecar.injection.state import Injected
from sidecar.injection.state_repo import StateRepo
from sidecar.injection.trace import TraceRing
from sidecar.store.db import Database


def test_the_channels_dropped_are_exactly_those_named(tmp_path: Path) -> None:
    """Over calls with the held channels changing (the digests remembered between calls),
    the channels dropped are those whose SHA-256 is named, computed afresh."""
    db = Database(tmp_path / "memory.db")
    states = ChannelStates(StateRepo(db), lambda ids: {})
    gone = ResetElsewhere(states, TraceRing(lambda: 0))
    pick = random.Random(5)
    pool = [f"chan-{i}-\u00fc" for i in range(60)] + ["", " ", "a\u4e16b"]
    for _ in range(40):
        for name in pick.sample(pool, 10):
            states.get(name)  # read from the store (empty) and held
        held = set(states.names())
        named = pick.sample(pool, 8)
        digests = [hashlib.sha256(n.encode("utf-8")).hexdigest() for n in named]
        assert gone(digests) == len(held & set(named))
        assert set(states.names()) == held - set(named)
    left = len(states.names())
    assert left and gone(None) == left  # a feed gap: every channel
    assert states.names() == []
    db.close()


def test_copies_naming_an_erased_memory_are_exactly_those_dropped(tmp_path: Path) -> None:
    db = Database(tmp_path / "memory.db")
    states = ChannelStates(StateRepo(db), lambda ids: {})
    pick = random.Random(9)
    ids = [f"m{i}" for i in range(30)]
    named: dict[str, set[str]] = {}
    for c in range(40):
        state = states.get(f"c{c}")
        injected, buffered = pick.sample(ids, 3), pick.sample(ids, 2)
        state.injected = {m: Injected(turn=1, version=1, at_us=0) for m in injected}
        state.buffer_ids = buffered
        named[f"c{c}"] = {*injected, *buffered}
    erased = pick.sample(ids, 4)
    expected = {c for c, held in named.items() if held & set(erased)}
    assert expected and len(expected) < len(named)
    assert states.drop_naming(erased) == len(expected)
    assert set(states.names()) == set(named) - expected
    db.close()
