"""Store rows of the per-channel injection state (tables from the store's migrations).

``injection_channels`` (the turn), ``injection_ids`` (the id cooldown), ``injection_buffer``
(the semantic buffer), ``injection_blocks`` (the blocks a channel's agent holds) and
``injection_replies`` (the last committed reply, the keep a PruneHistory reported) and
``injection_context`` (the last user turns' embeddings: the query context) and
``channel_speakers`` (the users who have spoken in a channel).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np

from sidecar.conversation.query_context import MAX_TURNS, RecentTurn
from sidecar.injection.state import BUFFER_MAX, SPEAKERS_KEPT
from sidecar.store.contract import SqlStore
from sidecar.store.memories import blob_to_embedding, embedding_to_blob

_PER_TURN = ("injection_ids", "injection_buffer", "injection_blocks")


class ChannelMoved(Exception):
    """Another sidecar committed a turn of the channel since this one read its state."""


class ChosenErased(ChannelMoved):
    """A memory the turn chose was erased while the turn was built: nothing is written,
    and the turn is built again."""


@dataclass(frozen=True, slots=True)
class InjectedRow:
    memory_id: str
    turn: int
    version: int
    at_us: int


@dataclass(frozen=True, slots=True)
class BufferRow:
    memory_id: str
    turn: int
    embedding: np.ndarray


@dataclass(frozen=True, slots=True)
class SavedChannel:
    turn: int
    injected: list[InjectedRow]
    buffer: list[BufferRow]  # oldest first
    blocks: list[tuple[int, str]]  # (turn, digest), oldest first
    keep: int | None
    reply: dict[str, object] | None  # the last reply, as ``replies.to_json`` wrote it
    recent: list[RecentTurn] = field(default_factory=list)  # oldest first
    speakers: frozenset[str] = frozenset()  # at most SPEAKERS_KEPT


@dataclass(frozen=True, slots=True)
class Dropped:
    """The rows a commit dropped from a channel's memory copy, one by one (a store that only
    this sidecar writes mirrors the copy, so nothing is looked up to find them)."""

    ids: tuple[str, ...] = ()  # injection_ids rows
    turns: tuple[int, ...] = ()  # blocks, with their buffer rows
    oldest: int = 0  # then the oldest buffer rows beyond BUFFER_MAX
    context: tuple[int, ...] = ()  # injection_context rows (turns)

    def __bool__(self) -> bool:
        return bool(self.ids or self.turns or self.oldest or self.context)


@dataclass(frozen=True, slots=True)
class Saved:
    """One commit's rows. ``dropped``: the rows it drops, one by one; None (a store other
    sidecars write too): worked out by the store, ``held`` (when set) deleting the rows of
    every other turn, the query context trimmed to its last MAX_TURNS."""

    turn: int
    injected: list[InjectedRow]
    buffer: list[BufferRow]
    block: tuple[int, str] | None
    reply: dict[str, object]
    keep: int | None
    held: frozenset[int] | None
    asked: RecentTurn | None = None  # the turn's text and embedding (the next turns' context)
    speaker: str | None = None  # a user who spoke in the channel (None: none new)
    dropped: Dropped | None = None


# ``StateRepo.load``'s reads, in its order; each takes the channel id (the last, a limit too).
_LOAD = (
    "SELECT turn FROM injection_channels WHERE channel_id = ?",
    "SELECT memory_id, turn, version, injected_at FROM injection_ids WHERE channel_id = ?",
    "SELECT memory_id, turn, embedding FROM injection_buffer WHERE channel_id = ? ORDER BY seq",
    "SELECT turn, digest FROM injection_blocks WHERE channel_id = ? ORDER BY turn",
    "SELECT keep, reply FROM injection_replies WHERE channel_id = ?",
    "SELECT turn, text, embedding, reply, votes, reply_votes, speaker FROM injection_context "
    "WHERE channel_id = ? ORDER BY turn",
    "SELECT user_id FROM channel_speakers WHERE channel_id = ? LIMIT ?",
)


class StateRepo:
    def __init__(self, db: SqlStore) -> None:
        self.db = db

    def load(self, channel_id: str) -> SavedChannel | None:
        """The channel's stored state (None: none): its reads in one snapshot, one round
        trip on a shared store."""
        turn, ids, buffer, blocks, reply, recent, speakers = self.db.read_together(
            [(sql, (channel_id,)) for sql in _LOAD[:-1]]
            + [(_LOAD[-1], (channel_id, SPEAKERS_KEPT))])
        if not turn:
            return None
        return SavedChannel(
            turn=int(turn[0][0]),
            injected=[InjectedRow(r[0], r[1], r[2], r[3]) for r in ids],
            buffer=[BufferRow(r[0], r[1], blob_to_embedding(r[2]).copy()) for r in buffer],
            blocks=[(int(r[0]), str(r[1])) for r in blocks],
            keep=None if not reply or reply[0][0] is None else int(reply[0][0]),
            reply=None if not reply else json.loads(reply[0][1]),
            recent=[RecentTurn(int(r[0]), str(r[1]), blob_to_embedding(r[2]).copy(), str(r[3]),
                               votes_from_json(r[4]), votes_from_json(r[5]), str(r[6]))
                    for r in recent],
            speakers=frozenset(str(r[0]) for r in speakers))

    def save(self, channel_id: str, saved: Saved, expect: int | None = None) -> None:
        """Upsert the turn, the reply and the new rows in one transaction of writes (a
        shared store gets it in one round trip).

        ``expect``: compare-and-swap; the stored turn must still be ``expect`` (0: no
        state), else ChannelMoved and nothing is written (another sidecar committed first).
        The swap goes last: the channel's row is locked for the end of the transaction only."""
        with self.db.batched():
            self.write(channel_id, saved, expect)

    def write(self, channel_id: str, saved: Saved, expect: int | None = None) -> None:
        """``save``'s statements, in the caller's transaction (no savepoint of their own)."""
        self.db.execute(_REPLY, (channel_id, saved.keep, json.dumps(saved.reply)))
        self._insert(channel_id, saved)
        if saved.dropped is not None:
            if saved.dropped:
                self._drop(channel_id, saved.dropped)
        elif saved.held is not None:
            self._retain(channel_id, saved.held)
        if expect is None:
            self.db.execute(_TURN, (channel_id, saved.turn))
        else:
            self._swap_turn(channel_id, expect, saved.turn)

    def merge(self, channel_id: str, saved: Saved,
              check: tuple[str, tuple[object, ...]] | None = None,
              guard: Callable[[], None] | None = None) -> None:
        """A commit made while the store was away, reconciled: the turn takes the larger
        value, ids and buffer rows are added to what is there (the cooldown is the union).
        ``guard`` runs first and raises to write nothing; ``check``: a condition (and its
        parameters) that must hold, else ChannelMoved and nothing is written."""
        with self.db.batched():
            if guard is not None:
                guard()
            if check is not None:
                self.db.check(*check, ChannelMoved(channel_id))
            self.db.execute(
                "INSERT INTO injection_channels (channel_id, turn) VALUES (?, ?) "
                "ON CONFLICT (channel_id) DO UPDATE SET turn = CASE WHEN excluded.turn > "
                "injection_channels.turn THEN excluded.turn ELSE injection_channels.turn END",
                (channel_id, saved.turn))
            self._insert(channel_id, saved)

    def _swap_turn(self, channel_id: str, expect: int, turn: int) -> None:
        moved = ChannelMoved(channel_id)
        if expect == 0:
            self.db.guard("INSERT INTO injection_channels (channel_id, turn) VALUES (?, ?) "
                          "ON CONFLICT (channel_id) DO NOTHING", (channel_id, turn), moved)
        else:
            self.db.guard("UPDATE injection_channels SET turn = ? WHERE channel_id = ? "
                          "AND turn = ?", (turn, channel_id, expect), moved)

    def save_view(self, channel_id: str, keep: int, held: frozenset[int],
                  replied: RecentTurn | None = None) -> None:
        """What a PruneHistory reported: the blocks still held, the keep it used and the
        assistant's reply to a recent turn."""
        with self.db.batched():
            self.db.execute(
                "UPDATE injection_replies SET keep = ? WHERE channel_id = ?", (keep, channel_id))
            self._retain(channel_id, held)
            if replied is not None:
                self.db.execute(
                    "UPDATE injection_context SET reply = ?, reply_votes = ? "
                    "WHERE channel_id = ? AND turn = ?",
                    (replied.reply, votes_to_json(replied.reply_votes), channel_id,
                     replied.turn))

    def _insert(self, channel_id: str, saved: Saved) -> None:
        """Rows of a table in one statement (a server parses and runs each) or, on SQLite,
        one statement prepared once and run per row."""
        # An upsert's VALUES may not name a row twice (a turn's ids are distinct anyway).
        injected = list({r.memory_id: r for r in saved.injected}.values())
        if injected:
            self._rows(_IDS, [(channel_id, r.memory_id, r.turn, r.version, r.at_us)
                              for r in injected])
        if saved.buffer:  # seq (the buffer's order) follows the order of the rows
            self._rows(_BUFFER, [(channel_id, r.memory_id, r.turn,
                                  embedding_to_blob(r.embedding)) for r in saved.buffer])
        if saved.speaker is not None:
            self.db.execute(_SPEAKER, (channel_id, saved.speaker))
        if saved.block is not None:
            self.db.execute(_BLOCK, (channel_id, *saved.block))
        if saved.asked is not None:
            asked = saved.asked
            self.db.execute(
                _CONTEXT,
                (channel_id, asked.turn, asked.text, embedding_to_blob(asked.embedding),
                 asked.reply, votes_to_json(asked.votes), votes_to_json(asked.reply_votes),
                 asked.speaker))
            if saved.dropped is not None:
                return  # the turns the context dropped are in ``dropped``
            if asked.quiet:  # of content-free turns only the latest is kept (``remember``)
                self.db.execute("DELETE FROM injection_context WHERE channel_id = ? AND "
                                "text = '' AND turn <> ?", (channel_id, asked.turn))
            self.db.execute(
                "DELETE FROM injection_context WHERE channel_id = ? AND turn NOT IN (SELECT "
                "turn FROM injection_context WHERE channel_id = ? ORDER BY turn DESC "
                f"LIMIT {MAX_TURNS})",
                (channel_id, channel_id))

    def _rows(self, statement: tuple[str, str, int], rows: list[tuple[object, ...]]) -> None:
        """``rows`` by one multi-row statement, or on SQLite (in process: no round trips)
        one statement of constant text, prepared once, run per row."""
        head, tail, columns = statement
        if self.db.dialect == "sqlite":
            self.db.executemany(f"{head} VALUES {_values(columns, 1)}{tail}", rows)
        else:
            self.db.execute(f"{head} VALUES {_values(columns, len(rows))}{tail}",
                            tuple(v for row in rows for v in row))

    def _drop(self, channel_id: str, dropped: Dropped) -> None:
        """Delete the rows ``dropped`` names (the ids re-pointed to an earlier held block are
        among the rows the commit upserts)."""
        if dropped.ids:
            self.db.executemany("DELETE FROM injection_ids WHERE channel_id = ? AND "
                                "memory_id = ?", [(channel_id, m) for m in dropped.ids])
        if dropped.turns:
            turns = [(channel_id, t) for t in dropped.turns]
            self.db.executemany("DELETE FROM injection_blocks WHERE channel_id = ? AND "
                                "turn = ?", turns)
            self.db.executemany("DELETE FROM injection_buffer WHERE channel_id = ? AND "
                                "turn = ?", turns)
        if dropped.oldest:
            self.db.execute(
                "DELETE FROM injection_buffer WHERE seq IN (SELECT seq FROM injection_buffer "
                "WHERE channel_id = ? ORDER BY seq LIMIT ?)", (channel_id, dropped.oldest))
        if dropped.context:
            self.db.executemany("DELETE FROM injection_context WHERE channel_id = ? AND "
                                "turn = ?", [(channel_id, t) for t in dropped.context])

    def _retain(self, channel_id: str, held: frozenset[int]) -> None:
        """Delete the per-turn rows of blocks no longer held (and re-point ids that an
        earlier held block also carried, as the memory copy does)."""
        turns = tuple(sorted(held)) or (-1,)  # turns are >= 0: (-1,) holds none
        held_in = f"IN ({','.join('?' * len(turns))})"
        self.db.execute(
            "UPDATE injection_ids SET turn = (SELECT max(b.turn) FROM injection_buffer b "
            "WHERE b.channel_id = injection_ids.channel_id AND b.memory_id = "
            f"injection_ids.memory_id AND b.turn {held_in}) "
            f"WHERE channel_id = ? AND turn NOT {held_in} AND "
            "EXISTS (SELECT 1 FROM injection_buffer b WHERE b.channel_id = "
            "injection_ids.channel_id AND b.memory_id = injection_ids.memory_id AND "
            f"b.turn {held_in})",
            (*turns, channel_id, *turns, *turns))
        for table in _PER_TURN:
            self.db.execute(
                f"DELETE FROM {table} WHERE channel_id = ? AND turn NOT {held_in}",
                (channel_id, *turns))
        # The bounds are in the text, not parameters: a server's plan made once for every
        # channel (a prepared statement's) knows them (an unknown LIMIT is planned as a scan
        # of the whole table by seq).
        self.db.execute(
            "DELETE FROM injection_buffer WHERE channel_id = ? AND seq NOT IN (SELECT seq "
            f"FROM injection_buffer WHERE channel_id = ? ORDER BY seq DESC LIMIT {BUFFER_MAX})",
            (channel_id, channel_id))

    def stored(self, channel_id: str) -> bool:
        """Whether the channel has a state in the store."""
        return bool(self.db.execute(_LOAD[0], (channel_id,)))

    def delete(self, channel_id: str) -> bool:
        with self.db.transaction():
            existed = self.db.query_one(
                "SELECT 1 FROM injection_channels WHERE channel_id = ?", (channel_id,)
            ) is not None
            for table in ("injection_buffer", "injection_ids", "injection_blocks",
                          "injection_replies", "injection_context", "channel_speakers",
                          "injection_channels"):
                self.db.execute(f"DELETE FROM {table} WHERE channel_id = ?", (channel_id,))
            return existed


def votes_to_json(votes: tuple[tuple[str, float], ...]) -> str:
    return json.dumps([[m, w] for m, w in votes])


def votes_from_json(text: object) -> tuple[tuple[str, float], ...]:
    """Votes as ``votes_to_json`` wrote them (none for anything else)."""
    try:
        rows = json.loads(str(text))
        return tuple((str(m), float(w)) for m, w in rows)
    except (ValueError, TypeError):
        return ()


@lru_cache(maxsize=256)
def _values(columns: int, count: int) -> str:
    """``count`` rows of ``columns`` placeholders for a multi-row VALUES."""
    row = f"({','.join('?' * columns)})"
    return ",".join([row] * count)


_REPLY = ("INSERT INTO injection_replies (channel_id, keep, reply) VALUES (?, ?, ?) "
          "ON CONFLICT (channel_id) DO UPDATE SET keep = excluded.keep, reply = excluded.reply")
_TURN = ("INSERT INTO injection_channels (channel_id, turn) VALUES (?, ?) "
         "ON CONFLICT (channel_id) DO UPDATE SET turn = excluded.turn")
_SPEAKER = ("INSERT INTO channel_speakers (channel_id, user_id) VALUES (?, ?) "
            "ON CONFLICT (channel_id, user_id) DO NOTHING")
_BLOCK = ("INSERT INTO injection_blocks (channel_id, turn, digest) VALUES (?, ?, ?) "
          "ON CONFLICT (channel_id, turn) DO UPDATE SET digest = excluded.digest")
_CONTEXT = ("INSERT INTO injection_context (channel_id, turn, text, embedding, reply, votes, "
            "reply_votes, speaker) VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (channel_id, turn) "
            "DO UPDATE SET text = excluded.text, embedding = excluded.embedding, "
            "reply = excluded.reply, votes = excluded.votes, "
            "reply_votes = excluded.reply_votes, speaker = excluded.speaker")
# Multi-row statements: (the text before VALUES, the text after, the columns of a row).
_IDS = ("INSERT INTO injection_ids (channel_id, memory_id, turn, version, injected_at)",
        " ON CONFLICT (channel_id, memory_id) DO UPDATE SET turn = excluded.turn, "
        "version = excluded.version, injected_at = excluded.injected_at", 5)
_BUFFER = ("INSERT INTO injection_buffer (channel_id, memory_id, turn, embedding)", "", 4)
