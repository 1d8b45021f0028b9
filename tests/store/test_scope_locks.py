"""Sidecars sharing one PostgreSQL lock the scopes they write, not the store: two writes into
one scope run one at a time (the near-duplicate gate of the second sees the first), writes
into different scopes run at once."""

from __future__ import annotations

import threading

import psycopg

from sidecar.app import App
from sidecar.memory.service import UpsertResult
from sidecar.records import MemoryDraft, MemoryType
from sidecar.store.postgres.scope_locks import lock_statement, plan, scope_hash
from tests.waiting import wait_for

TEXT = "The staging database restarts every day at noon"


class Held:
    """``app`` writes ``draft`` and holds its transaction open after the row is written,
    until ``release``."""

    def __init__(self, app: App, draft: MemoryDraft) -> None:
        self.written = threading.Event()
        self.go = threading.Event()
        self.result: UpsertResult | None = None
        embedding = app.embedder.embed_one(draft.content)

        def after(result: UpsertResult) -> None:
            self.result = result
            self.written.set()
            self.go.wait()

        self.thread = threading.Thread(target=app.memories.write_claimed,
                                       args=(draft, embedding, lambda: True, after))
        self.thread.start()
        self.written.wait()

    def release(self) -> None:
        self.go.set()
        self.thread.join()


class Writer(threading.Thread):
    def __init__(self, app: App, draft: MemoryDraft) -> None:
        super().__init__()
        self.app, self.draft = app, draft
        self.result: UpsertResult | None = None

    def run(self) -> None:
        self.result = self.app.memories.upsert(self.draft)


def waiting_for_locks(dsn: str) -> int:
    with psycopg.connect(dsn, autocommit=True) as conn:
        row = conn.execute(
            "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted AND "
            "database = (SELECT oid FROM pg_database WHERE datname = current_database())"
        ).fetchone()
    return int(row[0]) if row else 0


def stored(dsn: str, text: str) -> list[str]:
    with psycopg.connect(dsn, autocommit=True) as conn:
        return [r[0] for r in conn.execute("SELECT id FROM memories WHERE content = %s",
                                           (text,))]


def test_two_writes_into_one_scope_take_turns_and_the_second_is_deduplicated(
        pair: tuple[App, App], pg_dsn: str) -> None:
    a, b = pair
    draft = MemoryDraft(TEXT, MemoryType.FACT, agent_id="ana", user_id="u1")
    held = Held(a, draft)
    second = Writer(b, draft)
    second.start()
    wait_for(lambda: waiting_for_locks(pg_dsn) == 1)  # b waits for a's scope
    assert second.is_alive() and stored(pg_dsn, TEXT) == []
    held.release()
    second.join()
    assert held.result is not None and second.result is not None
    assert second.result.deduplicated
    assert second.result.memory.id == held.result.memory.id
    assert stored(pg_dsn, TEXT) == [held.result.memory.id]


def test_writes_into_other_scopes_do_not_wait(pair: tuple[App, App], pg_dsn: str) -> None:
    a, b = pair
    held = Held(a, MemoryDraft(TEXT, MemoryType.FACT, agent_id="ana", user_id="u1"))
    try:
        for draft in (MemoryDraft(TEXT, MemoryType.FACT, agent_id="ana", user_id="u2"),
                      MemoryDraft(TEXT, MemoryType.FACT, agent_id="bob", user_id="u1"),
                      MemoryDraft(TEXT, MemoryType.FACT, agent_id="")):
            other = Writer(b, draft)
            other.start()
            other.join()  # commits while a's transaction is open
            assert other.result is not None and other.result.created
        assert len(stored(pg_dsn, TEXT)) == 3  # a's row is not committed yet
    finally:
        held.release()
    assert len(stored(pg_dsn, TEXT)) == 4


def test_the_agents_own_scope_waits_for_its_users_writes(pair: tuple[App, App],
                                                         pg_dsn: str) -> None:
    """A user's write reads the agent's general knowledge in its gate: a write into it waits."""
    a, b = pair
    held = Held(a, MemoryDraft(TEXT, MemoryType.FACT, agent_id="ana", user_id="u1"))
    general = Writer(b, MemoryDraft(TEXT, MemoryType.FACT, agent_id="ana"))
    general.start()
    wait_for(lambda: waiting_for_locks(pg_dsn) == 1)
    assert general.is_alive()
    held.release()
    general.join()
    assert general.result is not None and general.result.created


def test_a_user_write_holds_its_scope_and_shares_the_agents() -> None:
    ana, u1, u2 = scope_hash(("ana", "")), scope_hash(("ana", "u1")), scope_hash(("ana", "u2"))
    assert len({ana, u1, u2, scope_hash(("", "")), scope_hash(("an", "a"))}) == 5
    assert plan([("ana", "u1")]) == sorted([(ana, False), (u1, True)])
    assert plan([("ana", "u1"), ("ana", "u2"), ("ana", "")]) == sorted(
        [(ana, True), (u1, True), (u2, True)])  # exclusive wins over shared
    sql, params = lock_statement([("ana", "u1")])
    assert sql.startswith("SELECT pg_advisory_xact_lock_shared(?::bigint), ")
    assert len(params) == 5
    assert lock_statement(None)[0] == "SELECT pg_advisory_xact_lock(?::bigint)"


def test_an_erasure_waits_for_every_write_in_flight(pair: tuple[App, App], pg_dsn: str) -> None:
    """An erasure may change rows of any scope: it holds the store, as every write did."""
    a, b = pair
    held = Held(a, MemoryDraft(TEXT, MemoryType.FACT, agent_id="ana", user_id="u1"))
    erased: list[int] = []
    erasure = threading.Thread(
        target=lambda: erased.append(b.eraser.erase_records_before("bob", 1)))
    erasure.start()
    wait_for(lambda: waiting_for_locks(pg_dsn) == 1)
    assert erasure.is_alive()
    held.release()
    erasure.join()
    assert erased == [0]
