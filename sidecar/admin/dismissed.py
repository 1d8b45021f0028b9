"""Vault suggestions the operator dismissed on the admin page, kept in the store (table
``admin_dismissed``) so they stay dismissed across restarts, and on a shared PostgreSQL store
for every sidecar. A key names one suggestion: ``pair:<id>:<id>`` (ids sorted) or
``delete:<id>:<reason>``."""

from __future__ import annotations

from sidecar.store.contract import SqlStore
from sidecar.timing import now_us


def pair_key(first_id: str, second_id: str) -> str:
    a, b = sorted((first_id, second_id))
    return f"pair:{a}:{b}"


def deletion_key(memory_id: str, reason: str) -> str:
    return f"delete:{memory_id}:{reason}"


class Dismissed:
    def __init__(self, db: SqlStore) -> None:
        self.db = db

    def add(self, key: str) -> None:
        with self.db.transaction():
            self.db.execute(
                "INSERT INTO admin_dismissed (key, dismissed_us) VALUES (?, ?) "
                "ON CONFLICT (key) DO UPDATE SET dismissed_us = excluded.dismissed_us",
                (key, now_us()))

    def keys(self) -> set[str]:
        return {str(row[0]) for row in self.db.execute("SELECT key FROM admin_dismissed")}
