"""Two sidecars on one PostgreSQL store capture each turn once, whichever served it and
whichever drains it."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import replace
from time import time_ns

import pytest

from sidecar.api.server_config import ServerConfig
from sidecar.app import App
from sidecar.capture import CAPTURE_SOURCE
from sidecar.embedding import Embedder
from sidecar.errors import Unavailable
from sidecar.injection.config import MemoryInjectionConfig
from sidecar.injection.history import Message, Role
from sidecar.injection.types import InjectRequest
from sidecar.store.config import StoreConfig
from sidecar.store.memories import ListQuery
from tests.conftest import settings_for
from tests.pg.cluster import Cluster
from tests.waiting import wait_for

PLACES = ["Lisbon", "Porto", "Braga", "Faro", "Coimbra", "Aveiro", "Evora", "Sintra"]


def open_capturing(config: ServerConfig, name: str, embedder: Embedder, dsn: str) -> App:
    mine = replace(config, data_dir=f"{config.data_dir}-{name}")
    return App.open(mine, embedder=embedder, settings=settings_for(
        mine, store=StoreConfig(backend="postgres", dsn=dsn),
        defaults=MemoryInjectionConfig(capture="user")))


@pytest.fixture
def pair(config: ServerConfig, embedder: Embedder, pg_dsn: str) -> Iterator[tuple[App, App]]:
    a, b = open_capturing(config, "a", embedder, pg_dsn), open_capturing(config, "b", embedder,
                                                                         pg_dsn)
    yield a, b
    a.close()
    b.close()


def captured(app: App) -> list[str]:
    found, _ = app.memories.list(ListQuery(agent_id="ops", source=CAPTURE_SOURCE,
                                           page_size=1000))
    return sorted(m.content for m in found)


def test_two_sidecars_capture_each_turn_once(pair: tuple[App, App]) -> None:
    texts = [f"We spent the summer of 20{10 + n} in {place}" for n, place in enumerate(PLACES)]
    turns: list[int] = []
    lock = threading.Lock()

    def agent(app: App, mine: list[str]) -> None:
        for text in mine:
            got = app.injector.inject(InjectRequest("ops", "shared", text))
            with lock:
                turns.append(got.turn)

    threads = [threading.Thread(target=agent, args=(app, texts[n::2]))
               for n, app in enumerate(pair)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(turns) == list(range(1, 9))
    last = max(turns)
    # A retry of the last turn on either sidecar returns its reply and captures nothing.
    for app in pair:
        app.injector.inject(InjectRequest("ops", "shared", "a retried turn", turn=last))
    for app in pair:  # both drain at once: each pending capture is claimed by one
        app.injector.capture.drain.wake()  # type: ignore[union-attr]
    wait_for(lambda: len(captured(pair[0])) == len(texts))
    for app in pair:
        app.injector.capture.drain.flush()  # type: ignore[union-attr]
    assert captured(pair[0]) == captured(pair[1]) == sorted(texts)
    outcomes = pair[0].db.execute("SELECT outcome, count(*) FROM captures GROUP BY outcome")
    assert [tuple(r) for r in outcomes] == [("stored", len(texts))]
    stored = sum(app.injector.capture.drain.outcomes["stored"]  # type: ignore[union-attr]
                 for app in pair)
    assert stored == len(texts)  # each written by one sidecar only


def test_a_store_outage_never_fails_a_call_through_capture(config: ServerConfig,
                                                          embedder: Embedder) -> None:
    """PostgreSQL stopped: Inject keeps serving from memory (its own channel's captures left
    out) and PruneHistory keeps answering; the capture of a turn served meanwhile is written
    once the store is back, with no further call."""
    cluster = Cluster()
    cluster.start()
    app = None
    try:
        app = open_capturing(config, "a", embedder, cluster.new_database())
        said = "We spent the summer of 2015 in Faro"
        app.injector.inject(InjectRequest("ops", "c1", said))
        app.injector.capture.drain.flush()  # type: ignore[union-attr]
        assert captured(app) == [said]
        cluster.stop()
        asked = "Where did we spend 2015?"
        reply = app.injector.inject(InjectRequest("ops", "c1", asked))
        assert reply.turn == 2 and not any(i.memory.content == said for i in reply.items)
        history = [Message(Role.USER, said), Message(Role.ASSISTANT, "Faro, in the Algarve.")]
        assert app.injector.observe("c1", history, 3, "ops") == []
        cluster.start(cluster.port)
        wait_for(lambda: _answers(app) and app.injector.states.deferred == 0)
        app.injector.capture.drain.flush()  # type: ignore[union-attr]
        assert captured(app) == sorted([said, asked])
    finally:
        if app is not None:
            app.close()
        cluster.remove()


def _answers(app: App) -> bool:
    try:
        app.db.execute("SELECT 1")
    except Unavailable:
        return False
    return True


def test_two_sidecars_keep_each_users_memories_to_that_user(pair: tuple[App, App]) -> None:
    """Each user captured on one sidecar is offered their own memory on the other, never
    another user's, and a channel both spoke in (across the sidecars) gets neither."""
    a, b = pair
    said = {"ana": "My locker code at the gym is on a blue sticky note in my wallet",
            "ben": "My locker at the gym is the one next to the broken water fountain"}
    a.injector.inject(InjectRequest("ops", "ana-1", said["ana"], user_id="ana"))
    b.injector.inject(InjectRequest("ops", "ben-1", said["ben"], user_id="ben"))
    for app in pair:
        app.injector.capture.drain.flush()  # type: ignore[union-attr]

    def offered(app: App, user: str, channel: str) -> set[str]:
        got = app.injector.inject(InjectRequest("ops", channel, "Where is my gym locker?",
                                                user_id=user))
        return {i.memory.content for i in got.items}

    wait_for(lambda: said["ana"] in offered(b, "ana", f"ana-b-{time_ns()}"))
    wait_for(lambda: said["ben"] in offered(a, "ben", f"ben-a-{time_ns()}"))
    assert said["ben"] not in offered(b, "ana", "ana-2")
    assert said["ana"] not in offered(a, "ben", "ben-2")
    a.injector.inject(InjectRequest("ops", "gym", "Hello from the front desk", user_id="ana"))
    b.injector.inject(InjectRequest("ops", "gym", "Hi, I am new here", user_id="ben"))
    assert not set(said.values()) & offered(a, "ana", "gym")
