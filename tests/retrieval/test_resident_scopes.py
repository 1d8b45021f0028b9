"""Scopes resident on demand, through a real server on a real SQLite file with the real model:
start-up holds only the pinned scopes, a cold scope's first Search equals the answer with
every scope held, a write to a cold scope is seen when it is loaded, and eviction under a
tiny budget while searches and writes run returns no error, no stale and no forgotten hit."""

from __future__ import annotations

import gc
import shutil
import threading
from collections.abc import Iterator
from dataclasses import dataclass, replace
from itertools import cycle
from pathlib import Path

import apsw
import pytest
from memsidecar.v1 import injection_pb2 as inj
from memsidecar.v1 import memory_pb2 as m
from memsidecar.v1 import store_pb2 as s
from prometheus_client import generate_latest

from sidecar.admin.resident import resident_section
from sidecar.api.server_config import ServerConfig
from sidecar.app import App
from sidecar.embedding import Embedder
from sidecar.records import MemoryDraft, MemoryType, Relation, Viewer
from sidecar.retrieval.config import RetrievalConfig
from sidecar.retrieval.hybrid import HybridRetriever
from sidecar.retrieval.resident.keys import SHARED
from sidecar.vault.config import VaultConfig
from tests.conftest import Running, settings_for, start_server
from tests.retrieval.sentences import docstring_sentences, stdlib_modules

# (agent, user): memories. Sizes far apart, so each scope's BM25 statistics differ from the
# store's and from each other's.
SCOPES = {("", ""): 40, ("ana", ""): 30, ("bo", ""): 25,
          **{("ana", f"u{i}"): 12 + 3 * i for i in range(5)},
          **{("bo", f"u{i}"): 10 for i in range(3)}}
VIEWERS = [("", ""), ("ana", ""), ("bo", ""), ("ana", "u0"), ("ana", "u3"), ("bo", "u2"),
           ("ana", "u4")]


@dataclass(frozen=True)
class Corpus:
    stored: dict[tuple[str, str], list[str]]
    queries: list[str]


@pytest.fixture(scope="module")
def corpus() -> Corpus:
    sentences = docstring_sentences(stdlib_modules()[:120])
    assert len(sentences) > 600
    texts = iter(sentences[::3])
    stored = {key: [next(texts) for _ in range(n)] for key, n in SCOPES.items()}
    queries = [" ".join(t.split()[:6]) for t in sentences[1::3][:10]]
    return Corpus(stored, queries)


def fill(config: ServerConfig, embedder: Embedder, corpus: Corpus) -> None:
    """Every scope's memories (every other one important enough to seed the graph), edges
    between neighbours of a scope, from each scope to the shared one, and both ways between
    an agent's own scope and each of its users' (neither held at start)."""
    app = App.open(config, embedder=embedder)
    try:
        shared: list[str] = []
        held: dict[tuple[str, str], list[str]] = {}
        for (agent, user), texts in corpus.stored.items():
            ids = held[agent, user] = app.memories.import_batch([
                MemoryDraft(t, MemoryType.FACT, agent_id=agent, user_id=user,
                            importance=0.9 if i % 2 else 0.5) for i, t in enumerate(texts)]).ids
            shared = shared or ids
            for i in range(0, len(ids) - 1, 3):
                app.memories.add_edge(ids[i], ids[i + 1], Relation.RELATED_TO, 1.0,
                                      agent_id=agent)
            if agent:
                app.memories.add_edge(ids[1], shared[len(ids) % len(shared)],
                                      Relation.UPDATES, 1.0, agent_id=agent)
        for (agent, user), ids in held.items():
            own = held.get((agent, ""))
            if user and own:
                app.memories.add_edge(own[3], ids[4], Relation.RELATED_TO, 1.0,
                                      agent_id=agent)
                app.memories.add_edge(ids[5], own[5], Relation.RELATED_TO, 1.0,
                                      agent_id=agent)
    finally:
        app.close()


def serve(config: ServerConfig, embedder: Embedder, vault: VaultConfig | None = None,
          **retrieval: object) -> Running:
    """A server holding scopes on demand (the store would fit the default budget)."""
    return start_server(config, embedder, settings_for(
        config, retrieval=RetrievalConfig(residency="scopes", **retrieval),  # type: ignore[arg-type]
        vault=vault or VaultConfig()))


def engine(live: Running) -> HybridRetriever:
    retriever = live.server.app.retriever
    assert isinstance(retriever, HybridRetriever)
    return retriever


Hits = list[tuple[str, float, int]]


def answer(live: Running, query: str, viewer: tuple[str, str]) -> Hits:
    """(id, score, graph rank) of the hits."""
    reply = live.store.Search(s.SearchRequest(query=query, agent_id=viewer[0],
                                              user_id=viewer[1], limit=8))
    return [(h.memory.id, h.score, h.graph_rank) for h in reply.hits]


def assert_same(got: Hits, want: Hits) -> None:
    """The same hits in the same order, by the same graph ranks, with the same scores (the
    recency boost moves with the clock between the two answers: 1e-7 at most here)."""
    assert [(i, g) for i, _, g in got] == [(i, g) for i, _, g in want]
    assert [x for _, x, _ in got] == pytest.approx([x for _, x, _ in want], rel=0, abs=1e-6)


@pytest.fixture
def stored(config: ServerConfig, embedder: Embedder, corpus: Corpus) -> ServerConfig:
    fill(config, embedder, corpus)
    return config


def test_start_up_holds_only_the_pinned_scopes(stored: ServerConfig, embedder: Embedder,
                                               corpus: Corpus) -> None:
    live = serve(stored, embedder, resident_agents=("bo",))
    try:
        retriever = engine(live)
        stats = retriever.resident.stats()
        assert {name for name, _ in stats.held} == {"shared", "bo"}
        assert stats.loads == 0
        held = {(mem.agent_id, mem.user_id) for mem in retriever.live.snapshot()}
        assert held == {SHARED, ("bo", "")}
        assert len(retriever.live) == SCOPES[SHARED] + SCOPES[("bo", "")]
        answer(live, corpus.queries[0], ("ana", "u1"))
        assert retriever.resident.stats().loads == 2  # ana's own and ana/u1's
        scraped = generate_latest(live.server.app.metrics.registry).decode()
        assert "memsidecar_scope_loads_total 2.0" in scraped
        assert "memsidecar_resident_scopes 4.0" in scraped
        section = resident_section(retriever)
        assert "4 scopes held" in section and "ana/u1" in section
    finally:
        live.close()


@pytest.mark.parametrize("budget_mb", [0.5, 768.0])
def test_auto_holds_the_whole_store_when_it_fits_the_budget(
        stored: ServerConfig, embedder: Embedder, budget_mb: float) -> None:
    live = start_server(stored, embedder, settings_for(
        stored, retrieval=RetrievalConfig(resident_mb=budget_mb)))  # residency "auto"
    try:
        retriever = engine(live)
        whole = budget_mb > 1  # the store: about 1 MB
        assert retriever.resident.on_demand is not whole
        assert len(retriever.live) == (sum(SCOPES.values()) if whole else SCOPES[SHARED])
    finally:
        live.close()


def test_a_cold_scope_answers_its_first_search_as_with_every_scope_held(
        stored: ServerConfig, embedder: Embedder, corpus: Corpus) -> None:
    warm = serve(stored, embedder)
    try:
        for viewer in VIEWERS:  # every scope of the store held
            answer(warm, "warm up", viewer)
        assert len(engine(warm).live) == sum(SCOPES.values()) - sum(
            n for (a, u), n in SCOPES.items() if (a, u) not in
            {(a, "") for a, _ in VIEWERS} | set(VIEWERS))
        reference = {(viewer, q): answer(warm, q, viewer)
                     for viewer in VIEWERS for q in corpus.queries}
    finally:
        warm.close()
    for first in corpus.queries[:3]:  # a different first call each time
        cold = serve(stored, embedder)
        try:
            for viewer in VIEWERS:
                assert_same(answer(cold, first, viewer), reference[viewer, first])
            for viewer in VIEWERS:
                for q in corpus.queries:
                    assert_same(answer(cold, q, viewer), reference[viewer, q])
            assert engine(cold).resident.stats().loads == len(
                {k for v in VIEWERS for k in ((v[0], ""), v)} - {SHARED})
        finally:
            cold.close()
    assert all(reference[v, q] for v in VIEWERS for q in corpus.queries)
    assert any(g > 0 for hits in reference.values() for _, _, g in hits)  # edges took part


def test_loaded_scopes_link_every_stored_edge_between_held_memories(
        stored: ServerConfig, embedder: Embedder) -> None:
    """A load reads the edges from its scope's memories; those into it from a scope held
    before (an agent's own, loaded by an earlier call) are in the graph already."""
    cold = serve(stored, embedder)
    try:
        for viewer in VIEWERS:
            answer(cold, "first call", viewer)
        retriever = engine(cold)
        stored_edges = cold.server.app.memories.edges.all()
        held = {e.source_id for e in stored_edges} | {e.target_id for e in stored_edges}
        held = {i for i in held if retriever.live.seq_of(i) is not None}
        want = {(e.source_id, e.target_id) for e in stored_edges
                if e.source_id in held and e.target_id in held}
        got = {(m.id, target) for m, target in retriever.pointing_to(sorted(held),
                                                                     set(Relation))}
        assert got == want

        def scope(memory_id: str) -> tuple[str, str]:
            m = retriever.live.get(retriever.live.seq_of(memory_id) or -1)
            assert m is not None
            return m.agent_id, m.user_id

        across = [(scope(a), scope(b)) for a, b in want if scope(a) != scope(b)]
        assert any(SHARED not in pair for pair in across)  # an agent's own <-> its user's
        assert any(a[1] for a, _ in across) and any(b[1] for _, b in across)  # both ways
    finally:
        cold.close()


def test_a_write_to_a_cold_scope_is_seen_when_the_scope_is_loaded(
        stored: ServerConfig, embedder: Embedder) -> None:
    # Without the near-duplicate gate, which would load the writer's scopes first.
    live = serve(stored, embedder, VaultConfig(duplicate_gate=False))
    try:
        retriever = engine(live)
        assert not retriever.resident.held(("ana", "u2"))
        memory = live.store.UpsertMemory(s.UpsertMemoryRequest(memory=m.Memory(
            content="The lighthouse keeper counts herons every dawn", agent_id="ana",
            user_id="u2", type=m.MEMORY_TYPE_FACT))).memory
        assert retriever.live.seq_of(memory.id) is None  # cold: only the store has it
        hits = answer(live, "who counts herons at dawn?", ("ana", "u2"))
        assert hits[0][0] == memory.id
        # Held, evicted, edited while evicted, loaded again.
        assert retriever.resident.held(("ana", "u2"))
        retriever.resident.evict_over_budget(0)
        assert not retriever.resident.held(("ana", "u2"))
        assert retriever.live.seq_of(memory.id) is None
        edited = live.store.UpsertMemory(s.UpsertMemoryRequest(memory=m.Memory(
            id=memory.id, content="The lighthouse keeper counts gannets every dusk",
            agent_id="ana", user_id="u2", type=m.MEMORY_TYPE_FACT))).memory
        assert answer(live, "who counts gannets at dusk?", ("ana", "u2"))[0][0] == edited.id
        assert memory.id not in [h[0] for h in answer(live, "herons dawn", ("ana", "u3"))]
    finally:
        live.close()


@pytest.fixture
def tiny(stored: ServerConfig, embedder: Embedder) -> Iterator[Running]:
    # The shared scope (pinned) and a few more: most loads evict. Admitted by count only: on
    # a loaded machine the queue's time target would refuse some of these concurrent calls.
    live = serve(replace(stored, queue_target_ms=600_000), embedder, resident_mb=0.6)
    yield live
    live.close()


def test_eviction_under_a_tiny_budget_while_searches_and_writes_run(
        tiny: Running, corpus: Corpus) -> None:
    retriever = engine(tiny)
    errors: list[BaseException] = []
    forgotten: set[str] = set()  # acknowledged forgets
    contents: dict[str, str] = {}  # id -> the content last acknowledged
    owners: dict[str, tuple[str, str]] = {}  # id -> (agent, user)
    lock = threading.Lock()
    stop = threading.Event()

    def searcher(viewers: list[tuple[str, str]]) -> None:
        try:
            for viewer, q in zip(cycle(viewers), cycle(corpus.queries)):
                if stop.is_set():
                    return
                with lock:
                    gone = set(forgotten)
                    known = dict(contents)
                reply = tiny.store.Search(s.SearchRequest(query=q, agent_id=viewer[0],
                                                          user_id=viewer[1], limit=8))
                for hit in reply.hits:
                    mem = hit.memory
                    assert mem.id not in gone, "a forgotten memory returned"
                    assert mem.agent_id in ("", viewer[0]), "another agent's memory"
                    assert mem.user_id in ("", viewer[1]), "another user's memory"
                    if mem.id in known:  # edited before this search began
                        assert mem.content in (known[mem.id], contents.get(mem.id))
        except BaseException as exc:  # noqa: BLE001 - reported by the test
            errors.append(exc)

    def writer(agent: str, users: list[str]) -> None:
        try:
            for i in range(24):
                user = users[i % len(users)]
                mem = tiny.store.UpsertMemory(s.UpsertMemoryRequest(memory=m.Memory(
                    content=f"{corpus.queries[i % 10]} note {i} of {user}", agent_id=agent,
                    user_id=user, type=m.MEMORY_TYPE_FACT))).memory
                with lock:
                    contents[mem.id] = mem.content
                    owners[mem.id] = (agent, user)
                if i % 3 == 0:
                    edited = tiny.store.UpsertMemory(s.UpsertMemoryRequest(memory=m.Memory(
                        id=mem.id, content=f"{mem.content} edited", agent_id=agent,
                        user_id=user, type=m.MEMORY_TYPE_FACT))).memory
                    with lock:
                        contents[mem.id] = edited.content
                if i % 4 == 1:
                    tiny.store.ForgetMemory(s.ForgetMemoryRequest(id=mem.id, agent_id=agent))
                    with lock:
                        forgotten.add(mem.id)
        except BaseException as exc:  # noqa: BLE001 - reported by the test
            errors.append(exc)

    threads = [threading.Thread(target=searcher, args=(VIEWERS[i::2],)) for i in range(2)]
    writers = [threading.Thread(target=writer, args=("ana", ["u0", "u1", "u4"])),
               threading.Thread(target=writer, args=("bo", ["u0", "u2"]))]
    for t in threads + writers:
        t.start()
    for t in writers:
        t.join(timeout=300)
    stop.set()
    for t in threads:
        t.join(timeout=60)
    assert not errors, errors[0]
    stats = retriever.resident.stats()
    assert stats.evictions > 0 and stats.loads > stats.evictions
    # Every write is found where it belongs once its scope is loaded again.
    for mem_id, content in contents.items():
        viewer = owners[mem_id]
        got = tiny.store.GetMemory(s.GetMemoryRequest(id=mem_id, agent_id=viewer[0]))
        assert (got.content, got.agent_id, got.user_id) == (content, *viewer)
        hits = [h[0] for h in answer(tiny, content, viewer)]
        assert (mem_id in hits) == (mem_id not in forgotten), content


def first_inject(live: Running, viewer: tuple[str, str], text: str,
                 channel: str) -> list[tuple[str, int, float]]:
    """(id, section, score) of a channel's first Inject."""
    reply = live.injection.Inject(inj.InjectRequest(
        agent_id=viewer[0], user_id=viewer[1], channel_id=channel, source="user", text=text))
    return [(i.id, i.section, i.score) for i in reply.items]


def test_a_cold_scope_answers_its_first_inject_as_with_its_scopes_loaded_first(
        stored: ServerConfig, embedder: Embedder, corpus: Corpus, tmp_path: Path) -> None:
    """The Inject starts its scopes' loads before it embeds (``prefetch``); the reference
    loaded them before the call, so both searched the same held memories."""
    users = [v for v in VIEWERS if v[1]]
    texts = {v: corpus.queries[i % len(corpus.queries)] for i, v in enumerate(users)}
    # Each server on a copy of the store: an Inject records its accesses, which rank.
    copies = [replace(stored, data_dir=str(tmp_path / name)) for name in ("warm", "cold")]
    for copy in copies:
        shutil.copytree(stored.data_dir, copy.data_dir)
    warm = serve(copies[0], embedder)
    try:
        reference = {}
        for viewer in users:
            for key in ((viewer[0], ""), viewer):
                engine(warm).resident.load(key)
            reference[viewer] = first_inject(warm, viewer, texts[viewer], "-".join(viewer))
    finally:
        warm.close()
    cold = serve(copies[1], embedder)
    try:
        for viewer in users:
            assert not engine(cold).resident.held(viewer)
            got = first_inject(cold, viewer, texts[viewer], "-".join(viewer))
            assert [(i, s) for i, s, _ in got] == [(i, s) for i, s, _ in reference[viewer]]
            assert [x for _, _, x in got] == pytest.approx(
                [x for _, _, x in reference[viewer]], rel=0, abs=1e-6)
        assert engine(cold).resident.stats().loads == len(
            {k for v in users for k in ((v[0], ""), v)})
    finally:
        cold.close()
    assert all(reference.values())


def test_concurrent_first_injects_of_a_user_load_its_scopes_once(
        stored: ServerConfig, embedder: Embedder, corpus: Corpus) -> None:
    cold = serve(replace(stored, queue_target_ms=600_000), embedder)
    try:
        viewer = ("ana", "u3")
        replies: list[list[tuple[str, int, float]]] = []
        errors: list[BaseException] = []

        def call(n: int) -> None:
            try:
                replies.append(first_inject(cold, viewer, corpus.queries[n], f"c{n}"))
            except BaseException as exc:  # noqa: BLE001 - reported by the test
                errors.append(exc)

        threads = [threading.Thread(target=call, args=(n,)) for n in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
        assert not errors, errors[0]
        assert len(replies) == 4 and all(replies)
        assert engine(cold).resident.stats().loads == 2  # ana's own and ana/u3's
        for memory_id, _, _ in (item for reply in replies for item in reply):
            held = engine(cold).live.get(engine(cold).live.seq_of(memory_id) or -1)
            assert held is not None and held.agent_id in ("", "ana")
            assert held.user_id in ("", "u3")
    finally:
        cold.close()


def test_a_search_over_its_scopes_rows_alone_answers_as_the_whole_index(
        stored: ServerConfig, embedder: Embedder, corpus: Corpus) -> None:
    """The vector source scores only the viewer's scopes' rows when they are a small part of
    the index (``WITHIN_SHARE``): every viewer's answers equal those scoring every row."""
    live = serve(stored, embedder)
    try:
        for viewer in VIEWERS:  # every scope held, so each viewer's are a part of the index
            answer(live, "warm up", viewer)
        engine(live).within_share = 0  # never: every row scored
        assert engine(live)._within(Viewer("ana", "u0")) is None
        reference = {(viewer, q): answer(live, q, viewer)
                     for viewer in VIEWERS for q in corpus.queries}
        engine(live).within_share = 1  # whenever not the whole index
        within = engine(live)._within(Viewer("ana", "u0"))
        assert within is not None and len(within) == sum(
            SCOPES[k] for k in (SHARED, ("ana", ""), ("ana", "u0")))
        for viewer in VIEWERS:
            for q in corpus.queries:
                assert_same(answer(live, q, viewer), reference[viewer, q])
    finally:
        live.close()


def test_a_loaded_scope_is_kept_out_of_the_full_garbage_collections(
        stored: ServerConfig, embedder: Embedder) -> None:
    """A scope's records, once in the indexes, are frozen (``heap.keep_loaded``): a full
    collection, which the heap's growth triggers inside some call, does not walk them."""
    live = serve(stored, embedder)
    try:
        answer(live, "warm up", ("", ""))
        gc.collect()
        held = {m.id for m in engine(live).live.snapshot()}
        answer(live, "a first question", ("ana", "u3"))  # loads ana's and ana/u3's scopes
        loaded = [m for m in engine(live).live.snapshot() if m.id not in held]
        assert len(loaded) == SCOPES["ana", ""] + SCOPES["ana", "u3"]
        walked = {id(o) for o in gc.get_objects()}  # every generation but the frozen one
        assert not any(id(m) in walked for m in loaded)
        assert all(gc.is_tracked(m) for m in loaded)
    finally:
        live.close()


def test_start_up_sizes_what_a_load_would_grow(stored: ServerConfig, embedder: Embedder,
                                               corpus: Corpus) -> None:
    """Scopes on demand: the columns indexed by seq are sized for every stored seq and the
    vector matrix for the rows the budget holds at start, so a load grows nothing (a
    growth copies every row inside the call whose load crosses the size)."""
    db = apsw.Connection(str(Path(stored.data_dir) / "memsidecar.sqlite3"))
    with db:  # one user's memories written late in a long store's life: seqs far above
        db.execute("UPDATE memories SET seq = seq + 50000 WHERE agent_id = 'ana' "
                   "AND user_id = 'u3'")
    db.close()
    live = serve(stored, embedder)
    try:
        retriever = engine(live)
        top = live.server.app.memories.repos.memories.max_seq()
        assert top > 50000
        dense = retriever.vectors._dense  # type: ignore[attr-defined]
        assert len(retriever.live.alive) > top and len(dense._slot_of) > top
        assert len(dense._labels) >= sum(SCOPES.values())  # the budget holds the store
        columns = (retriever.live.alive, retriever.live.owner, dense._slot_of, dense._matrix)
        for viewer in VIEWERS:
            answer(live, corpus.queries[0], viewer)
        assert retriever.resident.stats().loads > 0
        after = (retriever.live.alive, retriever.live.owner, dense._slot_of, dense._matrix)
        assert all(a is b for a, b in zip(columns, after, strict=True))
    finally:
        live.close()
