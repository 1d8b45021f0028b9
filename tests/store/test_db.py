from __future__ import annotations

from pathlib import Path

import apsw
import numpy as np
import pytest

from sidecar.admin.dismissed import Dismissed
from sidecar.errors import FailedPrecondition
from sidecar.records import Memory, MemoryType
from sidecar.store.db import CorruptDatabase, Database
from sidecar.store.migrations import SCHEMA_VERSION
from sidecar.store.repos import Repositories


def test_new_database_is_wal_and_migrated(tmp_path: Path) -> None:
    db = Database(tmp_path / "a" / "m.sqlite3")
    assert db.query_one("PRAGMA journal_mode") == ("wal",)
    assert db.schema_version == SCHEMA_VERSION
    db.close()
    again = Database(tmp_path / "a" / "m.sqlite3")  # reopening migrates nothing
    assert again.schema_version == SCHEMA_VERSION
    again.close()


def test_newer_schema_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "m.sqlite3"
    conn = apsw.Connection(str(path))
    conn.execute(f"PRAGMA user_version={SCHEMA_VERSION + 1}")
    conn.close()
    with pytest.raises(FailedPrecondition, match="newer"):
        Database(path)


def test_a_dismissals_table_made_by_the_admin_page_is_kept(tmp_path: Path) -> None:
    """Schema 6 adds ``admin_dismissed``; a store at 5 whose admin page already created it
    keeps its rows."""
    path = tmp_path / "m.sqlite3"
    Database(path).close()
    conn = apsw.Connection(str(path))
    conn.execute("DROP TABLE admin_dismissed")
    conn.execute("CREATE TABLE admin_dismissed (key TEXT PRIMARY KEY, dismissed_us INTEGER "
                 "NOT NULL) WITHOUT ROWID; INSERT INTO admin_dismissed VALUES ('pair:a:b', 1)")
    conn.execute("DROP TABLE injection_context; DROP TABLE captures")  # made after 6
    conn.execute("DROP INDEX memories_user; DROP INDEX memories_own; "
                 "DROP TABLE channel_speakers")  # and after 9
    for table in ("memories", "memory_versions"):
        conn.execute(f"ALTER TABLE {table} DROP COLUMN user_id; "
                     f"ALTER TABLE {table} DROP COLUMN channel_private")
    conn.execute("PRAGMA user_version=5")
    conn.close()
    db = Database(path)
    assert db.schema_version == SCHEMA_VERSION >= 6
    assert Dismissed(db).keys() == {"pair:a:b"}
    db.close()


def _memory(memory_id: str) -> Memory:
    return Memory(id=memory_id, content="c", type=MemoryType.FACT, importance=0.5, created_at=1,
                  updated_at=1, last_accessed_at=0, access_count=0, source="", channel_id="",
                  agent_id="", forgotten=False, version=1)


def test_transaction_rolls_back_everything(tmp_path: Path) -> None:
    db = Database(tmp_path / "m.sqlite3")
    repo = Repositories.open(db).memories
    vec = np.ones(384, dtype=np.float32)
    with pytest.raises(RuntimeError), db.transaction():
        repo.insert(_memory("a"), vec)
        repo.insert(_memory("b"), vec)
        raise RuntimeError("crash between writes")
    assert repo.count() == 0
    repo.insert(_memory("c"), vec)
    stored = repo.embedding("c")
    assert stored is not None and np.array_equal(stored, vec)
    db.close()
    with pytest.raises(FailedPrecondition, match="closed"):
        repo.get("c")


def test_damage_found_after_opening_is_a_corrupt_database_error(tmp_path: Path) -> None:
    path = tmp_path / "m.sqlite3"
    db = Database(path)
    with db.transaction():
        db.executemany("INSERT INTO meta (key, value) VALUES (?, ?)",
                       [(f"k{i}", "v" * 500) for i in range(400)])
    db.close()
    with path.open("r+b") as f:  # a page in the middle zeroed; header and size intact
        f.seek(path.stat().st_size // 2 // 4096 * 4096)
        f.write(b"\0" * 4096)
    db = Database(path)
    with pytest.raises(CorruptDatabase, match=str(path)):
        db.execute("SELECT count(*), sum(length(value)) FROM meta")
    db.close()
