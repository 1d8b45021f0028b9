"""The mirror's members of a scope and type (the pinned pool's input) against a direct filter,
and its established flags (accessed or edited when put, or marked since)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from sidecar.records import Memory, MemoryType, Viewer
from sidecar.retrieval.mirror import LiveMemories

TYPES = (MemoryType.FACT, MemoryType.DECISION)


def memory(seq: int, rng: np.random.Generator) -> Memory:
    return Memory(id=f"m{seq}", content="", type=TYPES[seq % 2],
                  importance=float(rng.choice([0.2, 0.5, 0.9])),
                  created_at=0, updated_at=int(rng.integers(0, 5)), last_accessed_at=0,
                  access_count=int(rng.integers(0, 2)), source="", channel_id="",
                  agent_id=str(rng.choice(["", "", "a", "b"])), forgotten=False,
                  version=int(rng.choice([1, 1, 2])), seq=seq)


def test_members_match_a_direct_filter() -> None:
    rng = np.random.default_rng(5)
    memories = [memory(seq, rng) for seq in range(1, 301)]
    live = LiveMemories(capacity=8)
    live.put(memories)
    live.drop(memories[::7])
    alive = [m for i, m in enumerate(memories) if i % 7]
    marked = [m.id for m in alive[:40:3]]
    live.mark_established([*marked, "not-a-memory"])
    for agent in ("", "a"):
        for kind in TYPES:
            got = {m.id: flag for m, flag in live.members(live.filter(Viewer(agent), (kind,)))}
            pool = [m for m in alive if m.type == kind and m.visible_to(agent)]
            assert got == {m.id: m.access_count > 0 or m.version > 1 or m.id in marked
                           for m in pool}


def test_a_forgotten_and_restored_memory_starts_unestablished() -> None:
    first = replace(memory(1, np.random.default_rng(0)), access_count=0, version=1)
    live = LiveMemories()
    live.put([first])
    live.mark_established([first.id])
    live.drop([first])
    live.put([first])
    assert live.members(live.filter(Viewer(), (first.type,))) == [(first, False)]
