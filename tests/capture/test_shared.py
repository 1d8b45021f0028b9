"""Two sidecars on one PostgreSQL store capture each turn once, whichever served it and
whichever drains it."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import replace

import pytest

from sidecar.api.server_config import ServerConfig
from sidecar.app import App
from sidecar.capture import CAPTURE_SOURCE
from sidecar.embedding import Embedder
from sidecar.injection.config import MemoryInjectionConfig
from sidecar.injection.types import InjectRequest
from sidecar.store.config import StoreConfig
from sidecar.store.memories import ListQuery
from tests.conftest import settings_for
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
