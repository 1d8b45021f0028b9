"""Vault suggestions the operator dismissed on the admin page, kept in the database so they
stay dismissed across restarts. A key names one suggestion: ``pair:<id>:<id>`` (ids sorted)
or ``delete:<id>:<reason>``."""

from __future__ import annotations

from sidecar.store.db import Database
from sidecar.timing import now_us

SCHEMA = """CREATE TABLE IF NOT EXISTS admin_dismissed (
    key          TEXT PRIMARY KEY,
    dismissed_us INTEGER NOT NULL
) WITHOUT ROWID"""


def pair_key(first_id: str, second_id: str) -> str:
    a, b = sorted((first_id, second_id))
    return f"pair:{a}:{b}"


def deletion_key(memory_id: str, reason: str) -> str:
    return f"delete:{memory_id}:{reason}"


class Dismissed:
    def __init__(self, db: Database) -> None:
        self.db = db
        db.execute(SCHEMA)

    def add(self, key: str) -> None:
        self.db.execute("INSERT OR REPLACE INTO admin_dismissed (key, dismissed_us) "
                        "VALUES (?, ?)", (key, now_us()))

    def keys(self) -> set[str]:
        return {row[0] for row in self.db.execute("SELECT key FROM admin_dismissed")}
