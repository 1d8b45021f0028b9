"""Which memories of a pinned type the pinned section carries: an order that does not churn.

Per pinned type, candidates are ranked by
1. tier: CANON, then REGISTER, then LOG;
2. with ``pinned_sort = "importance"``: importance, highest first;
3. established first: a memory the agent was already given or read (``access_count > 0``)
   or that was changed after it was stored (``version > 1``), before one that is neither, so
   a bulk import of new memories of the same tier and importance does not push out the set
   in use, while an owner's edit brings a memory in;
4. the most recently updated first (a content, importance or tier change by the owner moves a
   memory up), then the most recently stored.
"""

from __future__ import annotations

from sidecar.records import Memory, MemoryType
from sidecar.store.db import Database
from sidecar.store.memories import COLUMNS, row_to_memory

_TAIL = "(access_count > 0 OR version > 1) DESC, updated_at DESC, seq DESC"
_ORDER = {"importance": f"tier ASC, importance DESC, {_TAIL}", "recent": f"tier ASC, {_TAIL}"}


def rank_key(memory: Memory, sort: str) -> tuple[float, ...]:
    """The order as a sort key (ascending); the reference of the SQL order."""
    established = 0 if memory.access_count > 0 or memory.version > 1 else 1
    tail = (established, -memory.updated_at, -memory.seq)
    if sort == "importance":
        return (int(memory.tier), -memory.importance, *tail)
    return (int(memory.tier), *tail)


def pinned_of_type(db: Database, memory_type: MemoryType, agent_id: str, sort: str,
                   limit: int) -> list[Memory]:
    """The first ``limit`` live memories of ``memory_type`` the agent may see, in rank order."""
    rows = db.execute(
        f"SELECT {COLUMNS} FROM memories WHERE forgotten = 0 AND type = ? "
        f"AND agent_id IN ('', ?) ORDER BY {_ORDER[sort]} LIMIT ?",
        (int(memory_type), agent_id, limit))
    return [row_to_memory(row) for row in rows]
