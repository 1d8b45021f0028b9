"""Sidecars sharing one PostgreSQL: an erasure on one and a turn's commit on another.

A turn held between choosing its memories and committing while the other sidecar erases
one of them, then let go: the turn writes nothing of it and is built again without it. A
turn whose commit holds the erased memory's scope when the erasure comes: the erasure waits
for it and erases what it wrote.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest

from sidecar.api.server_config import ServerConfig
from sidecar.app import App
from sidecar.embedding import Embedder
from sidecar.injection.state import Committed
from sidecar.injection.types import Injection, InjectRequest
from sidecar.records import MemoryDraft, MemoryType
from tests.capture.test_shared import open_capturing
from tests.waiting import wait_for

SECRET = "Zanzibar-Thimble"
QUESTION = "what is the code of the gym locker?"


@pytest.fixture
def capturing(config: ServerConfig, embedder: Embedder, pg_dsn: str
              ) -> Iterator[tuple[App, App]]:
    """Two sidecars on one database, capturing user turns (a turn writes its capture too)."""
    a, b = open_capturing(config, "a", embedder, pg_dsn), open_capturing(config, "b", embedder,
                                                                         pg_dsn)
    yield a, b
    b.close()
    a.close()


def rows_naming(dsn: str, *needles: str) -> dict[str, int]:
    """Per table of the database (the change feed's aside: its rows name an erased memory's
    id by design, so the other sidecars drop it), the rows whose text holds a needle."""
    found: dict[str, int] = {}
    with psycopg.connect(dsn) as conn:
        tables = [str(r[0]) for r in conn.execute(
            "SELECT tablename FROM pg_tables WHERE schemaname = 'public'").fetchall()]
        for table in tables:
            for needle in needles:
                row = conn.execute(f'SELECT count(*) FROM "{table}" t WHERE t::text LIKE %s',
                                   (f"%{needle}%",)).fetchone()
                if row is not None and row[0] and (table != "changes" or needle == SECRET):
                    found[f"{table}: {needle}"] = int(row[0])
    return found


def held_commits(app: App) -> tuple[threading.Event, threading.Event, list[list[str]]]:
    """``app``'s next turn commit held at its start (the memories chosen, nothing written):
    (reached, go, the ids each commit was called with)."""
    states = app.injector.states
    commit = states.commit
    reached, go = threading.Event(), threading.Event()
    chosen: list[list[str]] = []

    def held(state: Any, entry: Committed, *args: Any, **kwargs: Any) -> None:
        chosen.append(list(entry.ids))
        if not reached.is_set():
            reached.set()
            assert go.wait(60)
        commit(state, entry, *args, **kwargs)

    states.commit = held  # type: ignore[method-assign]
    return reached, go, chosen


def test_a_memory_erased_on_one_sidecar_while_a_turn_on_the_other_holds_it(
        capturing: tuple[App, App], pg_dsn: str) -> None:
    a, b = capturing
    memory = a.memories.upsert(MemoryDraft(f"The gym locker code is {SECRET}",
                                           MemoryType.FACT, agent_id="ops")).memory
    wait_for(lambda: b.retriever.live.seq_of(memory.id) is not None)  # type: ignore[attr-defined]
    reached, go, chosen = held_commits(b)
    got: list[Injection] = []
    call = threading.Thread(target=lambda: got.append(b.injector.inject(
        InjectRequest("ops", "c", QUESTION, user_id="alice"))), daemon=True)
    call.start()
    assert reached.wait(60)
    assert chosen == [[memory.id]]  # the turn chose it, and holds it
    a.eraser.erase_memory(memory.id, "ops")
    go.set()
    call.join(60)
    assert not call.is_alive() and len(got) == 1
    assert got[0].turn == 1 and SECRET not in got[0].block  # built again without it
    assert chosen[-1] == []
    b.injector.capture.drain.flush()  # type: ignore[union-attr]
    assert rows_naming(pg_dsn, memory.id, SECRET) == {}
    assert rows_naming(pg_dsn, "gym locker")  # the turn itself was written (its capture)


def test_an_erasure_waits_for_a_commit_holding_its_scope_and_erases_what_it_wrote(
        capturing: tuple[App, App], pg_dsn: str) -> None:
    """The turn's batch holds the memory's scope (shared) and waits for a row the test
    locks: the erasure waits for the turn, then erases its rows."""
    a, b = capturing
    memory = a.memories.upsert(MemoryDraft(f"The gym locker code is {SECRET}",
                                           MemoryType.FACT, agent_id="ops")).memory
    wait_for(lambda: b.retriever.live.seq_of(memory.id) is not None)  # type: ignore[attr-defined]
    assert b.injector.inject(InjectRequest("ops", "c", "hello there")).turn == 1
    with psycopg.connect(pg_dsn) as blocker:
        blocker.execute("SELECT 1 FROM injection_channels WHERE channel_id = 'c' FOR UPDATE")
        got: list[Injection] = []
        call = threading.Thread(target=lambda: got.append(b.injector.inject(
            InjectRequest("ops", "c", QUESTION))), daemon=True)
        call.start()
        wait_for(lambda: waiting(pg_dsn, "transactionid"))  # the turn's swap, after its lock
        erasing = threading.Thread(target=lambda: a.eraser.erase_memory(memory.id, "ops"),
                                   daemon=True)
        erasing.start()
        wait_for(lambda: waiting(pg_dsn, "advisory"))  # the erasure waits for the turn
        blocker.rollback()
    call.join(60)
    erasing.join(60)
    assert not call.is_alive() and not erasing.is_alive()
    assert got[0].turn == 2 and SECRET in got[0].block  # committed before the erasure
    b.injector.capture.drain.flush()  # type: ignore[union-attr]
    assert rows_naming(pg_dsn, memory.id, SECRET) == {}


def waiting(dsn: str, locktype: str) -> bool:
    """Whether a session of the database waits for a lock of ``locktype``."""
    with psycopg.connect(dsn) as conn:
        row = conn.execute("SELECT count(*) FROM pg_locks WHERE NOT granted AND locktype = %s",
                           (locktype,)).fetchone()
    return row is not None and int(row[0]) > 0
