"""ResetElsewhere: the channels another sidecar reset, named by digest, leave this one's memory."""

from __future__ import annotations

import hashlib
import random
from pathlib import Path

from sidecar.injection.channels import ChannelStates
from sidecar.injection.elsewhere import ResetElsewhere
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
