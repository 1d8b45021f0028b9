"""PostgreSQL away under two sidecars serving one channel: every user turn either sidecar
acknowledged meanwhile is captured once the store is back, each once, and no two under one
id."""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace

import grpc
import pytest
from memsidecar.v1 import injection_pb2 as i

from sidecar.api.server_config import ServerConfig
from sidecar.app import App
from sidecar.capture import CAPTURE_SOURCE
from sidecar.capture.modes import capture_id, user_key
from sidecar.embedding import Embedder
from sidecar.errors import Unavailable
from sidecar.injection import channels
from sidecar.injection.config import MemoryInjectionConfig
from sidecar.injection.types import InjectRequest
from sidecar.records import MemoryDraft, MemoryType
from sidecar.store.config import StoreConfig
from sidecar.store.memories import ListQuery
from tests.capture.test_shared import captured, open_capturing
from tests.conftest import Running, on_postgres, settings_for, start_server
from tests.pg.cluster import Cluster
from tests.store.test_erasure_races import QUESTION, SECRET, rows_naming
from tests.waiting import wait_for

PLACES = ["Lisbon", "Porto", "Braga", "Faro", "Coimbra", "Aveiro", "Evora", "Sintra", "Tomar",
          "Obidos", "Nazare", "Leiria"]
THINGS = ["my blue backpack", "the spare car keys", "grandma's recipe book", "the tent poles",
          "my hiking boots", "the wedding photos"]

REFUSED = (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.RESOURCE_EXHAUSTED)


def said(n: int) -> str:
    """A user turn of its own (its number keeps the near-duplicate gate from joining two)."""
    return (f"We left {THINGS[n % len(THINGS)]} in {PLACES[n % len(PLACES)]} "
            f"on trip number {n + 1}")


@contextmanager
def two_sidecars(config: ServerConfig, embedder: Embedder
                 ) -> Iterator[tuple[Cluster, list[Running]]]:
    """A throwaway cluster and two served sidecars on one database of it, capturing user
    turns; all stopped and removed afterwards."""
    cluster = Cluster()
    cluster.start()
    servers: list[Running] = []
    try:
        dsn = cluster.new_database()
        for name in "ab":
            mine = on_postgres(replace(config, data_dir=f"{config.data_dir}-{name}"), dsn)
            servers.append(start_server(mine, embedder, settings_for(
                mine, store=StoreConfig(backend="postgres", dsn=dsn),
                defaults=MemoryInjectionConfig(capture="user"))))
        yield cluster, servers
    finally:
        for server in servers:
            server.close()
        cluster.remove()


def caught_up(server: Running) -> bool:
    """Nothing of the outage left to write: no deferred turn, no pending capture."""
    app = server.server.app
    drain = app.injector.capture.drain  # type: ignore[union-attr]
    if app.injector.states.deferred:
        return False
    try:
        drain.flush()
        return drain.repo.pending_count() == 0
    except Unavailable:
        return False


def test_turns_acknowledged_while_the_store_is_away_are_captured_once(
        config: ServerConfig, embedder: Embedder) -> None:
    """Two threads a sidecar keep talking on two channels, through the stop and the return
    of PostgreSQL: "talk", known to both before, and "fresh", first used during the outage
    (both sidecars claim it provisionally; one claim wins once the store is back)."""
    with two_sidecars(config, embedder) as (cluster, servers):
        acked: list[tuple[str, str, int, str, str]] = []  # channel, text, turn, sidecar, phase
        phase = ["before"]
        lock = threading.Lock()
        count = iter(range(100_000))
        stop = threading.Event()

        def turn(server: Running, name: str, channel: str) -> None:
            with lock:
                text = said(next(count))
            try:
                reply = server.injection.Inject(i.InjectRequest(
                    channel_id=channel, agent_id="ops", text=text))
            except grpc.RpcError as err:  # refused, not acknowledged: the turn raced on both
                # sidecars (UNAVAILABLE, retry), or a loaded machine's server was busy
                assert err.code() in REFUSED, err.details()
                return
            with lock:
                acked.append((channel, text, reply.turn, name, phase[0]))

        def done(name: str, when: str, at_least: int) -> bool:
            with lock:
                return sum(1 for *_, n, p in acked if (n, p) == (name, when)) >= at_least

        for server, name in zip(servers, "ab", strict=True):
            turn(server, name, "talk")
        cluster.stop()
        phase[0] = "away"

        failed: list[BaseException] = []

        def serve(server: Running, name: str, first: int) -> None:
            n = first
            try:
                while not stop.is_set():
                    turn(server, name, "talk" if n % 2 else "fresh")
                    n += 1
            except BaseException as err:  # the test fails with it (never waits for it)
                failed.append(err)
                stop.set()

        threads = [threading.Thread(target=serve, args=(server, name, first))
                   for server, name in zip(servers, "ab", strict=True) for first in (0, 1)]
        for thread in threads:
            thread.start()
        try:
            wait_for(lambda: stop.is_set() or all(done(name, "away", 8) for name in "ab"))
            cluster.start(cluster.port)
            phase[0] = "back"
            wait_for(lambda: stop.is_set() or all(done(name, "back", 4) for name in "ab"))
        finally:
            stop.set()
            for thread in threads:
                thread.join()
        assert not failed, failed
        numbered = Counter((channel, n) for channel, _, n, _, when in acked if when == "away")
        assert any(times > 1 for times in numbered.values())  # both numbered turns alike

        wait_for(lambda: all(caught_up(s) for s in servers))
        db = servers[0].server.app.db
        rows = [(str(r[0]), str(r[1]), str(r[2]), str(r[3]), str(r[4])) for r in db.execute(
            "SELECT channel_id, key, agent_id, outcome, content FROM captures "
            "WHERE role = 'user'")]
        memories, _ = servers[0].server.app.memories.list(ListQuery(
            agent_id="ops", source=CAPTURE_SOURCE, page_size=1000))
        kept = Counter(m.content for m in memories) + Counter(
            content for *_, outcome, content in rows if outcome == "deduplicated")
        texts = Counter(text for _, text, *_ in acked)
        assert kept == texts, \
            f"{sum((kept & texts).values())} of {len(acked)} acknowledged user turns captured"
        assert {outcome for *_, outcome, _ in rows} <= {"stored", "deduplicated"}
        assert len(rows) == len(acked)  # each turn once
        ids = {capture_id(agent, channel, key) for channel, key, agent, *_ in rows}
        assert len(ids) == len(rows)
        assert {m.id for m in memories} <= ids  # each stored under its own turn's id


def test_turns_numbered_alike_get_ids_of_their_own() -> None:
    """Two sidecars numbering one channel's turn alike (a store away), even in the same
    microsecond, or a reset channel counting from 1 again: two turns, two ids."""
    keys = {user_key(7, 1_700_000_000_000_000) for _ in range(2)}
    assert len(keys) == 2
    assert len({capture_id("ops", "talk", key) for key in keys}) == 2


def test_a_turn_beyond_what_a_sidecar_can_keep_is_refused_not_forgotten(
        config: ServerConfig, embedder: Embedder, monkeypatch: pytest.MonkeyPatch) -> None:
    """While the store is away a sidecar keeps at most MAX_DEFERRED turns' captures; the next
    turn fails (UNAVAILABLE, nothing recorded) rather than being acknowledged and lost."""
    monkeypatch.setattr(channels, "MAX_DEFERRED", 2)
    cluster = Cluster()
    cluster.start()
    app = None
    try:
        app = open_capturing(config, "a", embedder, cluster.new_database())
        texts = [said(n) for n in range(5)]
        assert app.injector.inject(InjectRequest("ops", "c", texts[0])).turn == 1
        cluster.stop()
        assert [app.injector.inject(InjectRequest("ops", "c", t)).turn
                for t in texts[1:3]] == [2, 3]
        with pytest.raises(Unavailable) as refused:
            app.injector.inject(InjectRequest("ops", "c", "We never went back to Braga"))
        assert "retry once it is back" in refused.value.message
        cluster.start(cluster.port)
        wait_for(lambda: app is not None and app.injector.states.deferred == 0)
        assert app.injector.inject(InjectRequest("ops", "c", texts[3])).turn == 4
        app.injector.capture.drain.flush()  # type: ignore[union-attr]
        assert captured(app) == sorted(texts[:4])
    finally:
        if app is not None:
            app.close()
        cluster.remove()


def test_a_user_forgotten_once_the_store_is_back_keeps_none_of_the_turns_kept_meanwhile(
        config: ServerConfig, embedder: Embedder) -> None:
    """A user's turns acknowledged while the store was away, then ForgetUser once it is
    back, before the catch-up wrote them: their captures are written first and erased with
    the rest (before, the next commit wrote them after the erasure and the drain stored
    them as the user's memories again)."""
    cluster = Cluster()
    cluster.start()
    app = None
    secret = "My locker code at the gym is Zanzibar-Thimble"
    try:
        app = open_capturing(config, "a", embedder, cluster.new_database())
        app.injector.states._catch_up.close()  # what waits is written when this test says
        app.injector.inject(InjectRequest("ops", "c", said(0), user_id="alice"))
        cluster.stop()
        app.injector.inject(InjectRequest("ops", "c", secret, user_id="alice"))
        assert app.injector.states.deferred == 2  # the commit and its capture
        cluster.start(cluster.port)

        def answers() -> bool:
            try:
                assert app is not None
                app.db.execute("SELECT 1")
                return True
            except Unavailable:
                return False

        wait_for(answers)
        gone = app.eraser.forget_user("ops", "alice")
        assert gone.channels == 1
        app.injector.inject(InjectRequest("ops", "other", said(1)))  # writes what waits
        app.injector.capture.drain.flush()  # type: ignore[union-attr]
        assert app.injector.states.deferred == 0
        assert not app.db.execute("SELECT 1 FROM captures WHERE user_id = 'alice'")
        assert not app.db.execute("SELECT 1 FROM memories WHERE content LIKE '%Zanzibar%'")
        assert not app.db.execute("SELECT 1 FROM injection_channels WHERE channel_id = 'c'")
    finally:
        if app is not None:
            app.close()
        cluster.remove()


@contextmanager
def kept_elsewhere(config: ServerConfig, embedder: Embedder, feed: bool = True
                   ) -> Iterator[tuple[Cluster, str, App, App]]:
    """A throwaway cluster, its database and two sidecars on it, capturing; b writes what it
    keeps through an outage when the test says (no background catch-up) and, without
    ``feed``, reads no change meanwhile. All stopped and removed afterwards."""
    cluster = Cluster()
    cluster.start()
    apps: list[App] = []
    try:
        dsn = cluster.new_database()
        apps += [open_capturing(config, name, embedder, dsn) for name in "ab"]
        a, b = apps
        assert b.feed is not None
        b.injector.states._catch_up.close()
        if not feed:
            b.feed.close()
        yield cluster, dsn, a, b
    finally:
        for app in reversed(apps):
            app.close()
        cluster.remove()


def answers(app: App) -> bool:
    """Whether ``app``'s store answers (not within a second of finding it away)."""
    try:
        app.db.execute("SELECT 1")
        return True
    except Unavailable:
        return False


@pytest.mark.parametrize("seen_by", ["merge", "feed"])
def test_a_channel_reset_elsewhere_while_the_store_was_away_keeps_only_the_captures(
        config: ServerConfig, embedder: Embedder, seen_by: str) -> None:
    """Sidecar b keeps a turn of a channel through an outage; once the store is back, a
    resets the channel before b writes what it kept. b's kept commit was built on the
    conversation a deleted: it is dropped (before, b's merge brought the old conversation
    back at turn 2), its capture (what the user said) is written. ``merge``: b's change feed
    has not read the reset yet (the merge's own check refuses it); ``feed``: it has."""
    with kept_elsewhere(config, embedder, seen_by == "feed") as (cluster, _, a, b):
        assert b.injector.inject(InjectRequest("ops", "c", said(0))).turn == 1
        cluster.stop()
        assert b.injector.inject(InjectRequest("ops", "c", said(1))).turn == 2
        assert b.injector.states.deferred == 2  # the commit and its capture
        cluster.start(cluster.port)
        wait_for(lambda: answers(a))
        assert a.injector.reset("c")
        wait_for(lambda: answers(b))
        if seen_by == "feed":
            b.feed.catch_up()  # type: ignore[union-attr]
        b.injector.states.write_waiting()
        assert b.injector.states.deferred == 0
        assert not b.db.execute("SELECT 1 FROM injection_channels WHERE channel_id = 'c'")
        assert not b.db.execute("SELECT 1 FROM injection_context WHERE channel_id = 'c'")
        b.injector.capture.drain.flush()  # type: ignore[union-attr]
        assert captured(b) == sorted([said(0), said(1)])  # what the user said is kept
        assert b.injector.inject(InjectRequest("ops", "c", said(2))).turn == 1


def test_a_memory_erased_elsewhere_while_the_store_was_away_is_left_out_of_the_merge(
        config: ServerConfig, embedder: Embedder) -> None:
    """Sidecar b serves a turn injecting a memory through an outage; once the store is
    back, a erases the memory (hard ForgetMemory) before b writes what it kept. b merges the
    turn without the memory (before, the merge wrote its id and vector back)."""
    with kept_elsewhere(config, embedder, feed=False) as (cluster, dsn, a, b):
        memory = a.memories.upsert(MemoryDraft(f"The gym locker code is {SECRET}",
                                               MemoryType.FACT, agent_id="ops")).memory
        b.feed.catch_up()  # type: ignore[union-attr]  # b's index keeps it from now on
        assert b.injector.inject(InjectRequest("ops", "c", said(0))).turn == 1
        cluster.stop()
        kept = b.injector.inject(InjectRequest("ops", "c", QUESTION))
        assert kept.turn == 2 and SECRET in kept.block
        cluster.start(cluster.port)
        wait_for(lambda: answers(a))
        a.eraser.erase_memory(memory.id, "ops")
        wait_for(lambda: answers(b))
        b.injector.states.write_waiting()
        assert b.injector.states.deferred == 0
        assert b.db.execute("SELECT turn FROM injection_channels WHERE channel_id = 'c'") \
            == [(2,)]  # the turn is merged
        b.injector.capture.drain.flush()  # type: ignore[union-attr]
        assert rows_naming(dsn, memory.id, SECRET) == {}


@pytest.mark.parametrize("seen_by", ["merge", "feed"])
def test_a_user_erased_elsewhere_while_the_store_was_away_keeps_none_of_their_kept_turns(
        config: ServerConfig, embedder: Embedder, seen_by: str) -> None:
    """Sidecar b keeps alice's turns (in a channel the store knows she spoke in, and in one
    it does not) and bob's through an outage; once the store is back, a erases alice
    (ForgetUser) before b writes what it kept. None of alice's kept turns is written, their
    captures included (before, the captures came back after the erasure and the drain
    stored her words as memories again); bob's capture is. ``merge``: b's change feed has
    not read the erasure (the writes' own checks refuse them); ``feed``: it has."""
    secret = "My locker code at the gym is Zanzibar-Thimble"
    with kept_elsewhere(config, embedder, seen_by == "feed") as (cluster, dsn, a, b):
        b.owners.claim("c", "ops")  # as the Inject servicer does
        assert b.injector.inject(InjectRequest("ops", "c", said(0), user_id="alice")).turn == 1
        cluster.stop()
        b.injector.inject(InjectRequest("ops", "c", secret, user_id="alice"))
        b.injector.inject(InjectRequest("ops", "d", said(1) + " " + secret, user_id="alice"))
        b.injector.inject(InjectRequest("ops", "e", said(2), user_id="bob"))
        assert b.injector.states.deferred == 6  # three commits, three captures
        cluster.start(cluster.port)
        wait_for(lambda: answers(a))
        a.eraser.forget_user("ops", "alice")
        wait_for(lambda: answers(b))
        if seen_by == "feed":
            b.feed.catch_up()  # type: ignore[union-attr]
        b.injector.states.write_waiting()
        assert b.injector.states.deferred == 0
        b.injector.capture.drain.flush()  # type: ignore[union-attr]
        assert rows_naming(dsn, "Zanzibar", "alice") == {}
        assert captured(b) == [said(2)]  # bob's turn is still captured
        assert b.db.execute("SELECT channel_id FROM injection_channels ORDER BY 1") == [("e",)]
