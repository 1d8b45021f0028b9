"""Scopes resident on demand on a shared PostgreSQL store: the change feed applies another
sidecar's write to a scope this one holds and only notes one to a scope it does not hold,
which is read, with the write, when the scope is first used."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace

import pytest

from sidecar.api.server_config import ServerConfig
from sidecar.app import App
from sidecar.embedding import Embedder
from sidecar.errors import Unavailable
from sidecar.records import MemoryDraft, MemoryType, Viewer
from sidecar.retrieval.config import RetrievalConfig
from sidecar.retrieval.contract import SearchQuery
from sidecar.retrieval.hybrid import HybridRetriever
from sidecar.store.config import StoreConfig
from tests.conftest import settings_for
from tests.pg.cluster import Cluster
from tests.waiting import wait_for

ANA_U1 = Viewer(agent_id="ana", user_id="u1")
ANA_U2 = Viewer(agent_id="ana", user_id="u2")


def open_app(config: ServerConfig, name: str, embedder: Embedder, dsn: str) -> App:
    """A sidecar on ``dsn`` holding scopes on demand (the store would fit its budget)."""
    mine = replace(config, data_dir=f"{config.data_dir}-{name}")
    return App.open(mine, embedder=embedder, settings=settings_for(
        mine, store=StoreConfig(backend="postgres", dsn=dsn),
        retrieval=RetrievalConfig(residency="scopes")))


@pytest.fixture
def pair(config: ServerConfig, embedder: Embedder, pg_dsn: str) -> Iterator[tuple[App, App]]:
    a = open_app(config, "a", embedder, pg_dsn)
    b = open_app(config, "b", embedder, pg_dsn)
    yield a, b
    b.close()
    a.close()


def engine(app: App) -> HybridRetriever:
    assert isinstance(app.retriever, HybridRetriever)
    return app.retriever


def held_content(engine: HybridRetriever, memory_id: str) -> str:
    seq = engine.live.seq_of(memory_id)
    memory = None if seq is None else engine.live.get(seq)
    return "" if memory is None else memory.content


def hit_ids(app: App, text: str, viewer: Viewer) -> list[str]:
    query = SearchQuery(text=text, limit=5, agent_id=viewer.agent_id, user_id=viewer.user_id)
    return [h.memory.id for h in app.retriever.search(query).hits]


def test_another_sidecars_writes_reach_held_scopes_and_wait_in_the_store_for_cold_ones(
        pair: tuple[App, App]) -> None:
    a, b = pair
    ea = engine(a)
    assert hit_ids(a, "anything", ANA_U1) == []  # ana/u1 held on a from here (empty)
    assert ea.resident.held(("ana", "u1")) and not ea.resident.held(("ana", "u2"))
    cold = b.memories.upsert(MemoryDraft("The night ferry leaves from pier nine",
                                         MemoryType.FACT, agent_id="ana", user_id="u2")).memory
    held = b.memories.upsert(MemoryDraft("The tram depot closes at midnight",
                                         MemoryType.FACT, agent_id="ana", user_id="u1")).memory
    # The feed applies a's changes in commit order: the held scope's write arrives after the
    # cold one's was seen (and only noted).
    wait_for(lambda: hit_ids(a, "when does the tram depot close?", ANA_U1)[:1] == [held.id])
    assert ea.live.seq_of(cold.id) is None and not ea.resident.held(("ana", "u2"))
    loads = ea.resident.stats().loads
    assert hit_ids(a, "where does the night ferry leave?", ANA_U2)[:1] == [cold.id]
    assert ea.resident.stats().loads == loads + 1
    # Edited and forgotten on b while held on a: a follows.
    edited = b.memories.upsert(MemoryDraft("The night ferry leaves from pier four",
                                           MemoryType.FACT, id=cold.id, agent_id="ana",
                                           user_id="u2")).memory
    wait_for(lambda: "pier four" in held_content(ea, edited.id))
    b.memories.forget(held.id, agent_id="ana")
    wait_for(lambda: held.id not in hit_ids(a, "when does the tram depot close?", ANA_U1))
    # Evicted on a, written on b meanwhile, loaded again: the write is there.
    ea.resident.evict_over_budget(0)
    assert not ea.resident.held(("ana", "u2"))
    later = b.memories.upsert(MemoryDraft("The ferry timetable changes in spring",
                                          MemoryType.FACT, agent_id="ana", user_id="u2")).memory
    wait_for(lambda: later.id in hit_ids(b, "ferry timetable", ANA_U2))
    assert later.id in hit_ids(a, "when does the ferry timetable change?", ANA_U2)
    assert ea.live.seq_of(held.id) is None


def found_when_back(app: App, text: str, viewer: Viewer) -> list[str]:
    try:
        return hit_ids(app, text, viewer)
    except Unavailable:  # not back yet (one probe a second)
        return []


def test_a_scope_not_held_is_unavailable_while_the_store_is_away(
        config: ServerConfig, embedder: Embedder) -> None:
    cluster = Cluster()
    cluster.start()
    app = None
    try:
        app = open_app(config, "away", embedder, cluster.new_database())
        app.memories.upsert(MemoryDraft("The tram depot closes at midnight", MemoryType.FACT,
                                        agent_id="ana", user_id="u1"))
        app.memories.upsert(MemoryDraft("The night ferry leaves from pier nine",
                                        MemoryType.FACT, agent_id="ana", user_id="u2"))
        engine(app).resident.evict_over_budget(0)
        assert hit_ids(app, "tram depot", ANA_U1)  # ana/u1 held again
        cluster.stop()
        assert hit_ids(app, "tram depot", ANA_U1)  # held: served from memory
        with pytest.raises(Unavailable, match="does not hold in memory"):
            hit_ids(app, "night ferry", ANA_U2)  # not held: never answered without it
        assert not engine(app).resident.held(("ana", "u2"))
        cluster.start(cluster.port)
        wait_for(lambda: bool(found_when_back(app, "night ferry", ANA_U2)))
    finally:
        if app is not None:
            app.close()
        cluster.remove()
