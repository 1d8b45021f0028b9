"""The mirror's top-by-order selection (the pinned pool) against a direct sort."""

from __future__ import annotations

import numpy as np
import pytest

from sidecar.records import Memory, MemoryType
from sidecar.retrieval.mirror import LiveMemories

TYPES = (MemoryType.FACT, MemoryType.DECISION)


def memory(seq: int, rng: np.random.Generator) -> Memory:
    return Memory(id=f"m{seq}", content="", type=TYPES[seq % 2],
                  importance=float(rng.choice([0.2, 0.5, 0.9])),
                  created_at=0, updated_at=int(rng.integers(0, 5)), last_accessed_at=0,
                  access_count=0, source="", channel_id="",
                  agent_id=str(rng.choice(["", "", "a", "b"])), forgotten=False, version=1,
                  seq=seq)


@pytest.mark.parametrize("by_importance", [False, True])
@pytest.mark.parametrize("limit", [1, 5, 400])
def test_top_matches_a_direct_sort(by_importance: bool, limit: int) -> None:
    rng = np.random.default_rng(limit)
    memories = [memory(seq, rng) for seq in range(1, 301)]
    live = LiveMemories(capacity=8)
    live.put(memories)
    live.drop(memories[::7])
    alive = [m for i, m in enumerate(memories) if i % 7]
    for agent in ("", "a"):
        for kind in TYPES:
            got = live.top(live.filter(agent, (kind,)), by_importance, limit)
            pool = [m for m in alive if m.type == kind and m.visible_to(agent)]

            def key(m: Memory) -> tuple[float, ...]:
                order = (m.updated_at, m.seq)
                return (m.importance, *order) if by_importance else order

            assert [m.id for m in got] == [
                m.id for m in sorted(pool, key=key, reverse=True)[:limit]]
