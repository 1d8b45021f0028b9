"""Which held memories belong to which scope: the per-scope seqs and bytes, and the two
summaries the hot path reads instead of walking every scope (``labels``, ``all_bytes``)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from sidecar.records import Memory, MemoryType
from sidecar.retrieval.resident.members import ScopeMembers


def memory(seq: int, agent: str, user: str, text: str = "a note") -> Memory:
    return Memory(f"m{seq}", text, MemoryType.FACT, 0.5, 0, 0, 0, 0, "user", "", agent, False,
                  1, seq=seq, user_id=user)


def test_labels_and_bytes_follow_puts_moves_and_drops() -> None:
    members = ScopeMembers(dim=8)
    rng = np.random.default_rng(3)
    scopes = [("", ""), ("a", ""), ("a", "u1"), ("b", "u2")]
    held: dict[int, tuple[str, str]] = {}
    for step in range(400):
        seq = int(rng.integers(1, 120))
        if rng.random() < 0.3:
            members.drop([seq])
            held.pop(seq, None)
        else:  # a new memory, or one moved to another scope (an upsert may change owner)
            key = scopes[int(rng.integers(len(scopes)))]
            members.put([memory(seq, *key, text="x" * int(rng.integers(1, 50)))])
            held[seq] = key
        if step % 7 == 0:
            for key in scopes:
                want = sorted(s for s, k in held.items() if k == key)
                assert sorted(members.labels([key]).tolist()) == want
                assert members.total([key]) == len(want)
            both = members.labels([scopes[0], scopes[2]])
            assert sorted(both.tolist()) == sorted(
                s for s, k in held.items() if k in (scopes[0], scopes[2]))
            assert members.all_bytes() == sum(members.bytes_of(k) for k in scopes)
    assert members.labels([("nobody", "")]).dtype == np.int64


def test_a_memory_put_again_in_its_scope_counts_once() -> None:
    members = ScopeMembers(dim=8)
    first = memory(5, "a", "u")
    members.put([first])
    members.put([replace(first, content="a longer note than before")])
    assert members.labels([("a", "u")]).tolist() == [5]
    assert members.all_bytes() == members.bytes_of(("a", "u")) == members.size(
        replace(first, content="a longer note than before"))
