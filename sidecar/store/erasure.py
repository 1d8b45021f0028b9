"""Rows erased for good: memories with everything that names them, an end user's capture
records and the channels they spoke in (portable SQL; callers hold the transaction).

What names a memory: its history (``memory_versions``), its edges, a re-embed in progress
(``reembed``), capture records pointing at it, and the injection state of the channels it
was injected in (``injection_ids``, the semantic buffer's embeddings, the saved last reply,
whose block quotes it).
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import dataclass

from sidecar.records import CAPTURE_SOURCE, Edge, Memory
from sidecar.store.contract import Row, SqlStore
from sidecar.store.edges import COLUMNS as EDGE_COLUMNS
from sidecar.store.edges import row_to_edge
from sidecar.store.memories import COLUMNS, row_to_memory
from sidecar.store.scope_keys import erase_lock_statement, user_digest

CHUNK = 500  # ids per statement (SQLite binds at most 32,766 parameters)


@dataclass(frozen=True, slots=True)
class ErasedRows:
    memories: list[Memory]  # as they were (forgotten ones too)
    versions: int
    edges: list[Edge]
    captures: int
    channels: list[str]  # channels whose saved reply quoted one of them (blanked)


class ErasureRepo:
    def __init__(self, db: SqlStore) -> None:
        self.db = db

    # --- what to erase ------------------------------------------------------------------

    def user_memories(self, agent_id: str, user_id: str, limit: int) -> list[str]:
        """Ids of the first ``limit`` memories (forgotten ones too) of ``agent_id``'s user."""
        return [str(r[0]) for r in self.db.execute(
            # "user_id != ''": lets the planner use the partial index memories_user
            "SELECT id FROM memories WHERE agent_id = ? AND user_id = ? AND user_id != '' "
            "ORDER BY seq LIMIT ?", (agent_id, user_id, limit))]

    def user_channels(self, agent_id: str, user_id: str) -> list[str]:
        """The channels of ``agent_id`` where ``user_id`` spoke or had a turn captured."""
        return sorted({str(r[0]) for r in self.db.execute(
            "SELECT s.channel_id FROM channel_speakers s JOIN channel_owners o ON "
            "o.channel_id = s.channel_id WHERE s.user_id = ? AND o.agent_id = ? "
            "UNION SELECT channel_id FROM captures WHERE agent_id = ? AND user_id = ?",
            (user_id, agent_id, agent_id, user_id))})

    def oldest_captures(self, agent_id: str, limit: int, live_only: bool = True) -> list[str]:
        """Ids of the scope's ``limit`` oldest captured memories."""
        live = " AND forgotten = 0" if live_only else ""
        return [str(r[0]) for r in self.db.execute(
            f"SELECT id FROM memories WHERE agent_id = ? AND source = ?{live} "
            "ORDER BY created_at, seq LIMIT ?", (agent_id, CAPTURE_SOURCE, limit))]

    def captures_beyond(self, agent_id: str, keep: int) -> list[str]:
        """Ids of each owner's (user, or channel for a turn without one) captured memories
        of ``agent_id`` beyond its newest ``keep``, oldest first."""
        owners = self.db.execute(
            "SELECT user_id, channel_private, channel_id, count(*) FROM memories WHERE "
            "agent_id = ? AND source = ? GROUP BY user_id, channel_private, channel_id "
            "HAVING count(*) > ?", (agent_id, CAPTURE_SOURCE, keep))
        ids: dict[str, None] = {}
        for user_id, private, channel_id, count in owners:
            where = "user_id = ?" if user_id else "user_id = '' AND channel_private = ?"
            owner = user_id if user_id else private
            channel = "" if user_id else " AND channel_id = ?"
            params = (agent_id, CAPTURE_SOURCE, owner) + (() if user_id else (channel_id,))
            ids.update(dict.fromkeys(str(r[0]) for r in self.db.execute(
                f"SELECT id FROM memories WHERE agent_id = ? AND source = ? AND {where}"
                f"{channel} ORDER BY created_at, seq LIMIT ?", (*params, int(count) - keep))))
        return list(ids)

    def captures_before(self, agent_id: str, before_us: int) -> list[str]:
        """Ids of ``agent_id``'s captured memories written before ``before_us``."""
        return [str(r[0]) for r in self.db.execute(
            "SELECT id FROM memories WHERE agent_id = ? AND source = ? AND created_at < ? "
            "ORDER BY seq", (agent_id, CAPTURE_SOURCE, before_us))]

    def capture_agents(self) -> list[str]:
        """Agents with captured memories or capture records."""
        return sorted({str(r[0]) for r in self.db.execute(
            "SELECT DISTINCT agent_id FROM captures UNION SELECT DISTINCT agent_id FROM "
            "memories WHERE source = ?", (CAPTURE_SOURCE,))})

    # --- erasing (in the caller's transaction) --------------------------------------------

    def erase_user_captures(self, agent_id: str, user_id: str) -> int:
        """Every capture record of ``agent_id``'s user, pending or written. On a shared
        store, with the user's scope held exclusive, a change row naming the user: the
        sidecars that kept the user's turns while the store was away drop them."""
        if self.db.dialect == "postgres":
            self.db.execute(*erase_lock_statement([(agent_id, user_id)], exclusive=True))
            self.db.execute(
                "INSERT INTO changes (at, origin, erased_user) VALUES (?, coalesce("
                "current_setting('memsidecar.origin', true), ''), ?)",
                (time.time_ns() // 1000, user_digest((agent_id, user_id))))
            self.db.execute("SELECT pg_notify('memsidecar_changes', '')")
        self.db.execute("DELETE FROM captures WHERE agent_id = ? AND user_id = ?",
                        (agent_id, user_id))
        return self.db.changes()

    def erase_captures_before(self, agent_id: str, before_us: int) -> int:
        """Capture records of ``agent_id`` older than ``before_us`` (any outcome)."""
        self.db.execute("DELETE FROM captures WHERE agent_id = ? AND at_us < ?",
                        (agent_id, before_us))
        return self.db.changes()

    def erase_memories(self, ids: Sequence[str]) -> ErasedRows:
        """Delete the memories of ``ids`` and every row that names them. On a shared store
        their scopes' erasure locks are held first (``scope_keys``): a turn's commit naming
        one of them either commits before and is erased with the rest, or waits and then
        writes nothing."""
        parts: list[tuple[tuple[str, ...], list[Row]]] = []
        for start in range(0, len(ids), CHUNK):
            part = tuple(ids[start:start + CHUNK])
            rows = self.db.execute(
                f"SELECT {COLUMNS} FROM memories WHERE id IN ({','.join('?' * len(part))})",
                part)
            if rows:
                parts.append((part, rows))
        memories = [row_to_memory(r) for _, rows in parts for r in rows]
        if memories and self.db.dialect == "postgres":
            self.db.execute(*erase_lock_statement({(m.agent_id, m.user_id) for m in memories},
                                                  exclusive=True))
        edges: list[Edge] = []
        channels: set[str] = set()
        versions = captures = 0
        for part, rows in parts:
            marks = ",".join("?" * len(part))
            edges += [row_to_edge(r) for r in self.db.execute(
                f"SELECT {EDGE_COLUMNS} FROM edges WHERE source_id IN ({marks}) UNION "
                f"SELECT {EDGE_COLUMNS} FROM edges WHERE target_id IN ({marks})", part * 2)]
            channels |= self._blank_replies(part, marks)
            self.db.execute(f"DELETE FROM edges WHERE source_id IN ({marks}) OR target_id IN "
                            f"({marks})", part * 2)
            self.db.execute(f"DELETE FROM memory_versions WHERE memory_id IN ({marks})", part)
            versions += self.db.changes()
            self.db.execute(f"DELETE FROM captures WHERE memory_id IN ({marks})", part)
            captures += self.db.changes()
            seqs = tuple(int(r[0]) for r in rows)
            self.db.execute(f"DELETE FROM reembed WHERE seq IN ({','.join('?' * len(seqs))})",
                            seqs)
            for table in ("injection_ids", "injection_buffer"):
                self.db.execute(f"DELETE FROM {table} WHERE memory_id IN ({marks})", part)
            if self.db.dialect == "postgres":  # the change feed tells the other sidecars
                self.db.execute(f"UPDATE memories SET forgotten = 1 WHERE id IN ({marks})",
                                part)
            self.db.execute(f"DELETE FROM memories WHERE id IN ({marks})", part)
        return ErasedRows(memories, versions, edges, captures, sorted(channels))

    def _blank_replies(self, part: tuple[str, ...], marks: str) -> set[str]:
        """The saved last replies (kept for a retry of the turn) of the channels these
        memories were injected in, without their block and items; the focus votes of those
        channels' last turns, without theirs."""
        channels = {str(r[0]) for r in self.db.execute(
            f"SELECT DISTINCT channel_id FROM injection_ids WHERE memory_id IN ({marks})",
            part)}
        for channel_id in sorted(channels):
            row = self.db.query_one(
                "SELECT reply FROM injection_replies WHERE channel_id = ?", (channel_id,))
            if row is None:
                continue
            saved = json.loads(str(row[0]))
            saved.update(block="", items=[])
            self.db.execute("UPDATE injection_replies SET reply = ? WHERE channel_id = ?",
                            (json.dumps(saved), channel_id))
        erased = set(part)
        for channel_id in sorted(channels):
            for turn, *votes in self.db.execute(
                    "SELECT turn, votes, reply_votes FROM injection_context WHERE "
                    "channel_id = ?", (channel_id,)):
                kept = [_without(str(v), erased) for v in votes]
                if kept != list(votes):
                    self.db.execute("UPDATE injection_context SET votes = ?, reply_votes = ? "
                                    "WHERE channel_id = ? AND turn = ?",
                                    (*kept, channel_id, turn))
        return channels


def _without(votes: str, erased: set[str]) -> str:
    """Focus votes (a JSON list of [memory id, weight]) without those for ``erased`` ids;
    as they were when none is (or they do not parse)."""
    try:
        rows = json.loads(votes)
        kept = [r for r in rows if str(r[0]) not in erased]
    except (ValueError, TypeError, IndexError, KeyError):
        return votes
    return votes if len(kept) == len(rows) else json.dumps(kept)
