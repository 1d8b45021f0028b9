"""Rows of ``captures``: a turn to capture (pending until the drain writes it, its text then
erased from the row unless the near-duplicate gate resolved it to another memory) and
whether its text is still in the channel's history (``held``). The channels known to hold
nothing (``quiet``) are answered without a read."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from sidecar.capture.quiet import QuietChannels
from sidecar.store.contract import SqlStore
from sidecar.store.memories import blob_to_embedding, embedding_to_blob

PENDING = ""
STORED = "stored"
DEDUPLICATED = "deduplicated"


@dataclass(frozen=True, slots=True)
class Pending:
    channel_id: str
    key: str
    agent_id: str
    role: str
    turn: int
    content: str
    context: str  # the message before it in the channel ('' unknown)
    at_us: int
    memory_id: str
    embedding: np.ndarray | None  # the user turn's query embedding, when Inject had it
    user_id: str = ""  # whose turn it is ('' = none known: private to the channel)


@dataclass(frozen=True, slots=True)
class Held:
    key: str
    turn: int
    content: str


_COLUMNS = ("channel_id, key, agent_id, role, turn, content, context, at_us, memory_id, "
            "embedding, user_id")
_HELD = ("SELECT c.key, c.turn, c.content, m.content FROM captures c LEFT JOIN memories m "
         "ON m.id = c.memory_id WHERE c.channel_id = ? AND c.held = 1 AND c.outcome IN "
         "(?, ?, ?)")


class CaptureRepo:
    def __init__(self, db: SqlStore) -> None:
        self.db = db
        # None on a shared store: other sidecars write captures this process does not see.
        self.quiet = QuietChannels() if db.dialect == "sqlite" else None

    def add(self, row: Pending) -> bool:
        """In the caller's transaction; False when the key is already captured."""
        self.put(row)
        return self.db.changes() == 1

    def put(self, row: Pending) -> None:
        """``add`` without its answer: it may go in a batch of writes (one round trip)."""
        blob = None if row.embedding is None else embedding_to_blob(row.embedding)
        self.db.execute(
            f"INSERT INTO captures ({_COLUMNS}) VALUES (?,?,?,?,?,?,?,?,?,?,?) "
            "ON CONFLICT (channel_id, key) DO NOTHING",
            (row.channel_id, row.key, row.agent_id, row.role, row.turn, row.content,
             row.context, row.at_us, row.memory_id, blob, row.user_id))
        if self.quiet is not None:
            self.quiet.written(row.channel_id)

    def add_refused(self, row: Pending) -> None:
        """A reply the text gates refused: its key only, so it is judged once."""
        self.db.execute(
            f"INSERT INTO captures ({_COLUMNS}, outcome, held) VALUES (?,?,?,?,?,'','',?,'',"
            "NULL,?,'refused',0) ON CONFLICT (channel_id, key) DO NOTHING",
            (row.channel_id, row.key, row.agent_id, row.role, row.turn, row.at_us,
             row.user_id))

    def pending_count(self) -> int:
        row = self.db.query_one("SELECT count(*) FROM captures WHERE outcome = ?", (PENDING,))
        return int(row[0]) if row else 0

    def pending(self, limit: int) -> list[Pending]:
        rows = self.db.execute(
            f"SELECT {_COLUMNS} FROM captures WHERE outcome = ? ORDER BY at_us LIMIT ?",
            (PENDING, limit))
        return [Pending(str(r[0]), str(r[1]), str(r[2]), str(r[3]), int(r[4]), str(r[5]),
                        str(r[6]), int(r[7]), str(r[8]),
                        None if r[9] is None else blob_to_embedding(r[9]).copy(), str(r[10]))
                for r in rows]

    def settle(self, row: Pending, outcome: str, memory_id: str = "") -> bool:
        """Record what became of a pending row and erase its text; False when it was not
        pending any more (another sidecar took it)."""
        self.db.execute(
            "UPDATE captures SET outcome = ?, memory_id = ?, content = '', context = '', "
            "embedding = NULL WHERE channel_id = ? AND key = ? AND outcome = ?",
            (outcome, memory_id, row.channel_id, row.key, PENDING))
        return self.db.changes() == 1

    def settle_now(self, row: Pending, outcome: str) -> bool:
        """``settle`` in a transaction of its own."""
        with self.db.transaction():
            return self.settle(row, outcome)

    def mark(self, row: Pending, outcome: str, memory_id: str) -> None:
        """A turn resolved to another memory: it keeps its own text (the hold compares it
        with the history; no memory carries it)."""
        self.db.execute("UPDATE captures SET outcome = ?, memory_id = ?, content = ? WHERE "
                        "channel_id = ? AND key = ?",
                        (outcome, memory_id, row.content, row.channel_id, row.key))

    def held_among(self, channel_id: str, min_turn: int, ids: list[str]
                   ) -> tuple[set[str], list[str]]:
        """Which of ``ids`` the channel's captures hold back there (turn >= ``min_turn``),
        and the texts of its held captures not written yet (what they resolve to is not
        known yet)."""
        if self.quiet is not None and channel_id in self.quiet:
            return set(), []
        marks = ",".join("?" * len(ids)) or "''"
        rows = self.db.execute(
            "SELECT memory_id, outcome, content FROM captures WHERE channel_id = ? AND held = 1 "
            f"AND turn >= ? AND (memory_id IN ({marks}) OR outcome = ?)",
            (channel_id, min_turn, *ids, PENDING))
        wanted = set(ids)
        held = {str(r[0]) for r in rows if str(r[0]) in wanted}
        return held, [str(r[2]) for r in rows if r[1] == PENDING and r[2]]

    def held_since(self, channel_id: str, min_turn: int) -> tuple[set[str], list[str]]:
        """``held_among`` of every memory: what the channel's captures hold back there."""
        if self.quiet is not None and channel_id in self.quiet:
            return set(), []
        rows = self.db.execute(
            "SELECT memory_id, outcome, content FROM captures WHERE channel_id = ? AND held = 1 "
            "AND turn >= ?", (channel_id, min_turn))
        return ({str(r[0]) for r in rows if r[0]},
                [str(r[2]) for r in rows if r[1] == PENDING and r[2]])

    def held(self, channel_id: str) -> list[Held]:
        """The channel's held captures with their text (pending: the row's; else the
        memory's), as committed: read apart, never waiting for a capture being written (the
        drain's transaction). None of them on a quiet channel, unread; a read that finds
        none is done again where writes are serialised, which may find the channel quiet."""
        quiet = self.quiet
        if quiet is not None and channel_id in quiet:
            return []
        rows = self.db.read_apart(_HELD, (channel_id, PENDING, STORED, DEDUPLICATED))
        if not rows and quiet is not None:
            began = quiet.begin()
            rows = self.db.execute(_HELD, (channel_id, PENDING, STORED, DEDUPLICATED))
            if not rows:
                quiet.found_none(channel_id, began)
        return [Held(str(r[0]), int(r[1]), str(r[2] or r[3] or "")) for r in rows]

    def release(self, channel_id: str, keys: list[str]) -> None:
        for start in range(0, len(keys), 500):
            part = keys[start:start + 500]
            self.db.execute(
                f"UPDATE captures SET held = 0 WHERE channel_id = ? AND key IN "
                f"({','.join('?' * len(part))})", (channel_id, *part))

    def release_all(self, channel_id: str) -> None:
        self.db.execute("UPDATE captures SET held = 0 WHERE channel_id = ?", (channel_id,))

    def known(self, channel_id: str, keys: list[str]) -> set[str]:
        """Which of ``keys`` the channel already captured."""
        found: set[str] = set()
        for start in range(0, len(keys), 500):
            part = keys[start:start + 500]
            found |= {str(r[0]) for r in self.db.execute(
                f"SELECT key FROM captures WHERE channel_id = ? AND key IN "
                f"({','.join('?' * len(part))})", (channel_id, *part))}
        return found

    def counts(self) -> dict[str, int]:
        """Rows per outcome ('' = pending)."""
        return {str(r[0]): int(r[1]) for r in self.db.execute(
            "SELECT outcome, count(*) FROM captures GROUP BY outcome")}
