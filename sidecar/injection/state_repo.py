"""SQLite rows of the per-channel injection state (tables of migration 2)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from sidecar.store.db import Database
from sidecar.store.memories import blob_to_embedding, embedding_to_blob


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


class StateRepo:
    def __init__(self, db: Database) -> None:
        self.db = db

    def load(self, channel_id: str) -> SavedChannel | None:
        row = self.db.query_one(
            "SELECT turn FROM injection_channels WHERE channel_id = ?", (channel_id,)
        )
        if row is None:
            return None
        injected = [
            InjectedRow(r[0], r[1], r[2], r[3])
            for r in self.db.execute(
                "SELECT memory_id, turn, version, injected_at FROM injection_ids "
                "WHERE channel_id = ?", (channel_id,)
            )
        ]
        buffer = [
            BufferRow(r[0], r[1], blob_to_embedding(r[2]).copy())
            for r in self.db.execute(
                "SELECT memory_id, turn, embedding FROM injection_buffer "
                "WHERE channel_id = ? ORDER BY seq", (channel_id,)
            )
        ]
        return SavedChannel(turn=int(row[0]), injected=injected, buffer=buffer)

    def save(self, channel_id: str, turn: int, injected: list[InjectedRow],
             buffer: list[BufferRow], prune_before: int | None, buffer_max: int = 0) -> None:
        """Upsert the turn and rows in one transaction; drop rows with turn < ``prune_before``."""
        with self.db.transaction():
            self.db.execute(
                "INSERT INTO injection_channels (channel_id, turn) VALUES (?, ?) "
                "ON CONFLICT (channel_id) DO UPDATE SET turn = excluded.turn",
                (channel_id, turn),
            )
            if injected:
                self.db.executemany(
                    "INSERT INTO injection_ids (channel_id, memory_id, turn, version, "
                    "injected_at) VALUES (?,?,?,?,?) ON CONFLICT (channel_id, memory_id) DO "
                    "UPDATE SET turn = excluded.turn, version = excluded.version, "
                    "injected_at = excluded.injected_at",
                    [(channel_id, r.memory_id, r.turn, r.version, r.at_us) for r in injected],
                )
            if buffer:
                self.db.executemany(
                    "INSERT INTO injection_buffer (channel_id, memory_id, turn, embedding) "
                    "VALUES (?,?,?,?)",
                    [(channel_id, r.memory_id, r.turn, embedding_to_blob(r.embedding))
                     for r in buffer],
                )
            if prune_before is not None:
                self._prune(channel_id, prune_before, buffer_max)

    def _prune(self, channel_id: str, prune_before: int, buffer_max: int) -> None:
        for table in ("injection_ids", "injection_buffer"):
            self.db.execute(
                f"DELETE FROM {table} WHERE channel_id = ? AND turn < ?",
                (channel_id, prune_before),
            )
        if buffer_max:
            self.db.execute(
                "DELETE FROM injection_buffer WHERE channel_id = ? AND seq NOT IN ("
                "SELECT seq FROM injection_buffer WHERE channel_id = ? "
                "ORDER BY seq DESC LIMIT ?)",
                (channel_id, channel_id, buffer_max),
            )

    def delete(self, channel_id: str) -> bool:
        with self.db.transaction():
            existed = self.db.query_one(
                "SELECT 1 FROM injection_channels WHERE channel_id = ?", (channel_id,)
            ) is not None
            for table in ("injection_buffer", "injection_ids", "injection_channels"):
                self.db.execute(f"DELETE FROM {table} WHERE channel_id = ?", (channel_id,))
            return existed
