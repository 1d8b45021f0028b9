"""The pinned section does not churn: the rank order over the mirror against a reference, and a
bulk import over gRPC."""

from __future__ import annotations

import random

from memsidecar.v1 import memory_pb2 as m
from memsidecar.v1 import store_pb2 as s

from sidecar.injection.pinned import pinned_of_type
from sidecar.records import Memory, MemoryType, Tier, Viewer
from sidecar.retrieval.mirror import LiveMemories
from tests.injection.conftest import Serve
from tests.injection.helpers import inject, put


def test_pinned_order_from_the_mirror() -> None:
    """Tier, (importance), established (marked, accessed or edited), newest update, newest
    stored: against a reference that sorts in those passes, least significant first."""
    rng = random.Random(3)
    memories = []
    for i in range(80):
        stamp = rng.choice((100, 200, 300))
        memories.append(Memory(
            id=f"m{i}", content=f"todo {i}", type=rng.choice((MemoryType.TODO, MemoryType.GOAL)),
            importance=rng.choice((0.2, 0.5, 0.9)), created_at=stamp, updated_at=stamp,
            last_accessed_at=0, access_count=int(rng.random() < 0.25), source="",
            channel_id="", agent_id=rng.choice(("", "", "a", "b")), forgotten=False,
            version=rng.choice((1, 1, 1, 2)), tier=rng.choice(list(Tier)), seq=i + 1))
    live = LiveMemories()
    live.put(memories)
    marked = {f"m{i}" for i in rng.sample(range(80), 10)}
    live.mark_established(marked)
    for sort in ("recent", "importance"):
        for agent in ("", "a"):
            members = live.members(live.filter(Viewer(agent), (MemoryType.TODO,)))
            expected = [x for x in memories
                        if x.type is MemoryType.TODO and x.visible_to(agent)]
            expected.sort(key=lambda x: -x.seq)
            expected.sort(key=lambda x: -x.updated_at)
            expected.sort(key=lambda x: not (x.access_count or x.version > 1 or x.id in marked))
            if sort == "importance":
                expected.sort(key=lambda x: -x.importance)
            expected.sort(key=lambda x: int(x.tier))
            got = pinned_of_type(members, sort, 7)
            assert [x.id for x in got] == [x.id for x in expected[:7]], (sort, agent)


def test_bulk_import_does_not_rotate_the_pinned_set(serve: Serve) -> None:
    live = serve(ambient_enabled=True, pinned_types=(MemoryType.TODO,), pinned_limit=2,
                 pinned_sort="recent")
    hand = [put(live, text, m.MEMORY_TYPE_TODO) for text in (
        "Renew the TLS certificate", "Write the quarterly report", "Book the offsite venue")]
    first = inject(live, "hello", channel="a")
    assert [i.id for i in first.items] == [hand[2].id, hand[1].id]
    summary = live.store.ImportMemories(iter(
        s.UpsertMemoryRequest(memory=m.Memory(content=f"Imported ticket {n}: triage backlog",
                                               type=m.MEMORY_TYPE_TODO))
        for n in range(60)))
    assert summary.stored == 60
    again = inject(live, "hello", channel="b")
    assert [i.id for i in again.items] == [hand[2].id, hand[1].id]
    # an owner's edit brings a todo in
    live.store.UpsertMemory(s.UpsertMemoryRequest(memory=m.Memory(
        id=hand[0].id, content="Renew the TLS certificate before Friday",
        type=m.MEMORY_TYPE_TODO)))
    edited = inject(live, "hello", channel="c")
    assert [i.id for i in edited.items] == [hand[0].id, hand[2].id]
