"""Which memories of a pinned type the pinned section carries: an order that does not churn.

Per pinned type, candidates are ranked by
1. tier: CANON, then REGISTER, then LOG;
2. with ``pinned_sort = "importance"``: importance, highest first;
3. established first: a memory an agent was already given or read, or that was changed after
   it was stored (``version > 1``), before one that is neither (the retrieval mirror tracks
   this in memory, so choosing the pinned section reads no SQL), so
   a bulk import of new memories of the same tier and importance does not push out the set
   in use, while an owner's edit brings a memory in;
4. the most recently updated first (a content, importance or tier change by the owner moves a
   memory up), then the most recently stored.
"""

from __future__ import annotations

from collections.abc import Sequence

from sidecar.records import Memory


def rank_key(memory: Memory, sort: str, established: bool) -> tuple[float, ...]:
    """The pinned order as an ascending sort key."""
    tail = (0 if established else 1, -memory.updated_at, -memory.seq)
    if sort == "importance":
        return (int(memory.tier), -memory.importance, *tail)
    return (int(memory.tier), *tail)


def pinned_of_type(members: Sequence[tuple[Memory, bool]], sort: str,
                   limit: int) -> list[Memory]:
    """The first ``limit`` of ``members`` ((memory, established) pairs of one pinned type
    visible to the agent) in rank order."""
    ranked = sorted(members, key=lambda pair: rank_key(pair[0], sort, pair[1]))
    return [memory for memory, _ in ranked[:limit]]
