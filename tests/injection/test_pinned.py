"""The pinned section does not churn: the rank order, its SQL against the reference key, and a
bulk import over gRPC."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
from memsidecar.v1 import memory_pb2 as m
from memsidecar.v1 import store_pb2 as s

from sidecar.injection.pinned import pinned_of_type, rank_key
from sidecar.records import Memory, MemoryType, Tier
from sidecar.store.db import Database
from sidecar.store.memories import MemoryRepo
from tests.injection.conftest import Serve
from tests.injection.helpers import inject, put


def test_sql_order_matches_the_reference_key(tmp_path: Path) -> None:
    rng = random.Random(3)
    db = Database(tmp_path / "s.sqlite3")
    repo = MemoryRepo(db)
    with db.transaction():
        for i in range(80):
            stamp = rng.choice((100, 200, 300))
            repo.insert(Memory(
                id=f"m{i}", content=f"todo {i}", type=rng.choice((MemoryType.TODO,
                                                                   MemoryType.GOAL)),
                importance=rng.choice((0.2, 0.5, 0.9)), created_at=stamp, updated_at=stamp,
                last_accessed_at=0, access_count=0, source="", channel_id="",
                agent_id=rng.choice(("", "", "a", "b")), forgotten=rng.random() < 0.1,
                version=1, tier=rng.choice(list(Tier))), np.zeros(384, np.float32))
        for i in rng.sample(range(80), 20):
            db.execute("UPDATE memories SET access_count = 1 WHERE id = ?", (f"m{i}",))
        for i in rng.sample(range(80), 10):
            db.execute("UPDATE memories SET version = 2, updated_at = 400 WHERE id = ?",
                       (f"m{i}",))
    everything = repo.get_many([f"m{i}" for i in range(80)]).values()
    for sort in ("recent", "importance"):
        for agent in ("", "a"):
            live = [x for x in everything if x.type is MemoryType.TODO and not x.forgotten
                    and x.visible_to(agent)]
            expected = [x.id for x in sorted(live, key=lambda x: rank_key(x, sort))][:7]
            got = [x.id for x in pinned_of_type(db, MemoryType.TODO, agent, sort, 7)]
            assert got == expected, (sort, agent)
    db.close()


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
