"""``memsidecar migrate``: SQLite -> PostgreSQL -> SQLite keeps every row, refuses a full
target unless --append, takes the DSN from the environment, carries the admin page's
dismissals."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from sidecar.admin.dismissed import Dismissed, pair_key
from sidecar.capture.repo import CaptureRepo, Pending
from sidecar.cli import main
from sidecar.injection.owners import ChannelOwners
from sidecar.injection.state_repo import StateRepo
from sidecar.records import Edge, Relation
from sidecar.store.contract import SqlStore
from sidecar.store.copy import CHANNEL_TABLES, DISMISSED, EDGES, MEMORIES, VERSIONS
from sidecar.store.db import Database
from sidecar.store.postgres.db import PgDatabase
from sidecar.store.postgres.dsn import DSN_ENV
from sidecar.store.repos import Repositories
from tests.store.contract_data import memory, saved_turn, vector

TABLES = (MEMORIES, VERSIONS, EDGES, *CHANNEL_TABLES, DISMISSED)


def fill(db: SqlStore, count: int) -> None:
    repos = Repositories.open(db)
    for n in range(count):
        stored = repos.memories.insert(memory(f"m{n}", updated_at=n + 1), vector(n))
        if n % 3 == 0:
            repos.memories.update(replace(stored, content="edited", version=2), None)
    repos.edges.upsert(Edge("m1", "m0", Relation.UPDATES, 0.7, 5))
    StateRepo(db).save("chan", saved_turn(1, ["m0", "m1"]))
    ChannelOwners(db).claim("chan", "agent")
    with db.transaction():
        CaptureRepo(db).add(Pending("chan", "user:1:5", "agent", "user", 1, "a turn", "", 5,
                                    "capture-1", vector(1)))
    Dismissed(db).add(pair_key("m1", "m0"))


def rows(db: SqlStore) -> dict[str, list[tuple[object, ...]]]:
    return {t.name: sorted(tuple(r) for r in db.execute(
        f"SELECT {', '.join(t.columns)} FROM {t.name}")) for t in TABLES}


def test_round_trip_keeps_every_row(tmp_path: Path, pg_dsn: str,
                                    monkeypatch: pytest.MonkeyPatch,
                                    capsys: pytest.CaptureFixture[str]) -> None:
    source = Database(tmp_path / "a" / "memsidecar.sqlite3")
    fill(source, 1203)  # more than one batch
    expected = rows(source)
    source.close()
    monkeypatch.setenv(DSN_ENV, pg_dsn)
    assert main(["migrate", "--from", f"sqlite:{tmp_path / 'a'}", "--to", "postgres:"]) == 0
    assert "memories: 1203/1203" in capsys.readouterr().err
    pg = PgDatabase(pg_dsn)
    assert rows(pg) == expected
    assert Repositories.open(pg).memories.insert(memory("next"), vector(1)).seq == 1204
    pg.close()
    assert main(["migrate", "--from", "postgres:", "--to", f"sqlite:{tmp_path / 'b'}"]) == 0
    back = Database(tmp_path / "b" / "memsidecar.sqlite3")
    again = rows(back)
    assert again["memories"][:-1] == expected["memories"] and len(again["memories"]) == 1204
    assert again["edges"] == expected["edges"] and again["channel_owners"] == \
        expected["channel_owners"]
    assert again["admin_dismissed"] == expected["admin_dismissed"] != []
    back.close()


def test_a_full_target_needs_append(tmp_path: Path, pg_dsn: str,
                                    capsys: pytest.CaptureFixture[str]) -> None:
    for name, count in (("a", 3), ("b", 5)):
        db = Database(tmp_path / name / "memsidecar.sqlite3")
        fill(db, count)
        db.close()
    spec = f"postgres:{pg_dsn}"
    assert main(["migrate", "--from", f"sqlite:{tmp_path / 'a'}", "--to", spec]) == 0
    assert main(["migrate", "--from", f"sqlite:{tmp_path / 'b'}", "--to", spec]) == 2
    assert "--append" in capsys.readouterr().err
    assert main(["migrate", "--from", f"sqlite:{tmp_path / 'b'}", "--to", spec,
                 "--append"]) == 0
    pg = PgDatabase(pg_dsn)
    assert Repositories.open(pg).memories.count() == 5  # m0..m2 were there already
    assert StateRepo(pg).load("chan") is not None
    pg.close()
    assert main(["migrate", "--from", "mysql:x", "--to", spec]) == 2
