"""Append-only memory history: one ``memory_versions`` row per insert, update and forget.

Rows are only ever inserted. MemoryRepo writes them inside the caller's transaction, so a
version row exists exactly when its change was committed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sidecar.records import Memory, MemoryType, Tier, memory_type, tier_of
from sidecar.store.contract import Row, SqlStore

# Event names recorded in memory_versions.event.
CREATE, UPDATE, FORGET, PROMOTE, RESTORE, BASELINE = (
    "create", "update", "forget", "promote", "restore", "baseline",
)

COLUMNS = (
    "memory_id, version, event, recorded_at, actor, content, type, importance, source, "
    "channel_id, agent_id, forgotten, tier, topic_id, user_id, channel_private"
)


@dataclass(frozen=True, slots=True)
class MemoryVersion:
    """The full state of a memory right after one change, and who/what made it."""

    memory_id: str
    version: int
    event: str
    recorded_at: int  # microseconds since the epoch
    actor: str
    content: str
    type: MemoryType
    importance: float
    source: str
    channel_id: str
    agent_id: str
    forgotten: bool
    tier: Tier
    topic_id: str
    user_id: str = ""
    channel_private: bool = False


def row_to_version(row: Row) -> MemoryVersion:
    return MemoryVersion(
        memory_id=row[0], version=row[1], event=row[2], recorded_at=row[3], actor=row[4],
        content=row[5], type=memory_type(row[6]), importance=float(row[7]), source=row[8],
        channel_id=row[9], agent_id=row[10], forgotten=bool(row[11]), tier=tier_of(row[12]),
        topic_id=row[13], user_id=row[14], channel_private=bool(row[15]),
    )


INSERT = f"INSERT INTO memory_versions ({COLUMNS}) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)"


def version_row(memory: Memory, event: str, actor: str, recorded_at: int) -> tuple[Any, ...]:
    return (
        memory.id, memory.version, event, recorded_at, actor, memory.content,
        int(memory.type), memory.importance, memory.source, memory.channel_id,
        memory.agent_id, int(memory.forgotten), int(memory.tier), memory.topic_id,
        memory.user_id, int(memory.channel_private),
    )


class VersionRepo:
    def __init__(self, db: SqlStore) -> None:
        self.db = db

    def append(self, memory: Memory, event: str, actor: str, recorded_at: int) -> None:
        self.db.execute(INSERT, version_row(memory, event, actor, recorded_at))

    def append_many(self, memories: Sequence[Memory], event: str) -> None:
        """One version per memory, in order: ``event`` by its source, at its updated_at."""
        self.db.executemany(INSERT, [version_row(m, event, m.source, m.updated_at)
                                     for m in memories])

    def versions(self, memory_id: str) -> list[MemoryVersion]:
        """Every recorded version of the memory, oldest first."""
        rows = self.db.execute(
            f"SELECT {COLUMNS} FROM memory_versions WHERE memory_id = ? ORDER BY seq",
            (memory_id,),
        )
        return [row_to_version(row) for row in rows]

    def latest(self, memory_id: str, limit: int) -> tuple[list[MemoryVersion], int]:
        """At most ``limit`` versions of the memory, newest first, and how many it has."""
        rows = self.db.execute(
            f"SELECT {COLUMNS} FROM memory_versions WHERE memory_id = ? ORDER BY seq DESC "
            "LIMIT ?", (memory_id, limit))
        total = self.db.query_one(
            "SELECT count(*) FROM memory_versions WHERE memory_id = ?", (memory_id,))
        return [row_to_version(row) for row in rows], int(total[0]) if total else 0

    def history(self, memory_id: str, agent_id: str, limit: int
                ) -> tuple[list[MemoryVersion], int]:
        """The latest ``limit`` versions of the memory, oldest first, and how many it has; with
        ``agent_id``, only the versions visible to that agent (shared or its own)."""
        where = "memory_id = ? AND agent_id IN ('', ?)" if agent_id else "memory_id = ?"
        params = (memory_id, agent_id) if agent_id else (memory_id,)
        rows = self.db.execute(
            f"SELECT {COLUMNS} FROM memory_versions WHERE {where} ORDER BY seq DESC LIMIT ?",
            (*params, limit))
        total = self.db.query_one(f"SELECT count(*) FROM memory_versions WHERE {where}", params)
        return [row_to_version(row) for row in reversed(rows)], int(total[0]) if total else 0

    def count(self) -> int:
        row = self.db.query_one("SELECT count(*) FROM memory_versions")
        return int(row[0]) if row else 0
