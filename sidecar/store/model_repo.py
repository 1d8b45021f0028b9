"""The embedding model recorded beside the vectors, and the staged vectors of a re-embed.

``meta['embedding.model']`` names the model of every vector in ``memories.embedding``.
A re-embed towards ``meta['embedding.target']`` stages one vector per memory row in
``reembed`` (with the row's version then); ``swap`` copies them over in one transaction.
"""

from __future__ import annotations

import numpy as np

from sidecar.store.contract import SqlStore
from sidecar.store.memories import embedding_to_blob

MODEL_KEY = "embedding.model"
TARGET_KEY = "embedding.target"


class ModelRepo:
    def __init__(self, db: SqlStore) -> None:
        self.db = db

    def get(self, key: str) -> str | None:
        row = self.db.query_one("SELECT value FROM meta WHERE key = ?", (key,))
        return None if row is None else str(row[0])

    def set(self, key: str, value: str) -> None:
        self.db.execute("INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) "
                        "DO UPDATE SET value = excluded.value", (key, value))

    def start_target(self, target: str) -> None:
        """Aim the staged vectors at ``target``; staged vectors of another target are dropped."""
        with self.db.transaction():
            if self.get(TARGET_KEY) != target:
                self.db.execute("DELETE FROM reembed")
                self.set(TARGET_KEY, target)

    def clear_target(self) -> None:
        with self.db.transaction():
            self.db.execute("DELETE FROM reembed")
            self.db.execute("DELETE FROM meta WHERE key = ?", (TARGET_KEY,))

    def pending(self, limit: int) -> list[tuple[int, int, str]]:
        """(seq, version, content) of rows with no staged vector at their current version."""
        return [(int(r[0]), int(r[1]), str(r[2])) for r in self.db.execute(
            "SELECT m.seq, m.version, m.content FROM memories m LEFT JOIN reembed r "
            "ON r.seq = m.seq AND r.version = m.version WHERE r.seq IS NULL "
            "ORDER BY m.seq LIMIT ?", (limit,))]

    def progress(self) -> tuple[int, int]:
        """(rows staged at their current version, rows in the store)."""
        row = self.db.query_one(
            "SELECT (SELECT count(*) FROM reembed r JOIN memories m ON m.seq = r.seq "
            "AND m.version = r.version), (SELECT count(*) FROM memories)")
        assert row is not None
        return int(row[0]), int(row[1])

    def stage(self, rows: list[tuple[int, int]], vectors: np.ndarray) -> None:
        with self.db.transaction():
            self.db.executemany(
                "INSERT INTO reembed (seq, version, embedding) VALUES (?, ?, ?) ON CONFLICT (seq) "
                "DO UPDATE SET version = excluded.version, embedding = excluded.embedding",
                [(seq, version, embedding_to_blob(v))
                 for (seq, version), v in zip(rows, vectors, strict=True)])

    def swap(self, target: str) -> None:
        """Copy every staged vector over its row and record ``target`` (call with no pending
        rows, inside the writers' lock)."""
        with self.db.transaction():
            self.db.execute("UPDATE memories SET embedding = (SELECT r.embedding FROM reembed r "
                            "WHERE r.seq = memories.seq) WHERE seq IN (SELECT seq FROM reembed)")
            self.set(MODEL_KEY, target)
            self.clear_target()
