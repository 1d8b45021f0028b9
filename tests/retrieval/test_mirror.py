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


def test_the_filter_offers_what_offered_to_offers_to_every_viewer() -> None:
    """The vectorised filter against ``Memory.offered_to`` and the type: shared, agents',
    users' and channels' private memories, for viewers with and without a user, a channel,
    a channel several users spoke in, and any number of types."""
    rng = np.random.default_rng(11)
    kinds = list(MemoryType)
    memories = []
    for seq in range(1, 401):
        agent = str(rng.choice(["", "a", "b"]))
        user = str(rng.choice(["", "", "u1", "u2"])) if agent else ""
        memories.append(replace(memory(seq, rng), agent_id=agent, user_id=user,
                                type=kinds[int(rng.integers(len(kinds)))],
                                channel_id=str(rng.choice(["c1", "c2"])),
                                channel_private=bool(agent and not user and rng.random() < 0.3)))
    live = LiveMemories(capacity=8)
    live.put(memories)
    labels = np.arange(0, 420, dtype=np.int64)
    for agent in ("", "a", "b"):
        for user in ("", "u1", "u2"):
            for channel in ("", "c1"):
                for shared in (False, True):
                    viewer = Viewer(agent, user, channel, shared)
                    for n in (0, 1, 3, len(kinds)):
                        types = tuple(kinds[:n])
                        got = live.filter(viewer, types)(labels)
                        want = [0 < s <= 400 and memories[s - 1].offered_to(viewer)
                                and (not types or memories[s - 1].type in types)
                                for s in labels.tolist()]
                        assert got.tolist() == want
