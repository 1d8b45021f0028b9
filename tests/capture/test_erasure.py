"""Erasure for good: ForgetUser and a hard ForgetMemory leave no byte of what they erase in
any file under the data dir (the database, its WAL, the index files), while the other
users' data stays, also after a restart; retention and a full scope erase captures."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import grpc
import pytest
from memsidecar.v1 import injection_pb2 as inj
from memsidecar.v1 import memory_pb2 as m
from memsidecar.v1 import store_pb2 as s

from sidecar.api.server_config import ServerConfig
from sidecar.app import App
from sidecar.capture.retention import DAY_US, retention_once
from sidecar.embedding import Embedder
from sidecar.injection.config import MemoryInjectionConfig
from sidecar.injection.state_config import ChannelStateConfig
from sidecar.injection.sweep import ChannelSweeper
from sidecar.live import Live
from sidecar.retrieval.config import RetrievalConfig
from sidecar.retrieval.vector.config import VectorConfig
from sidecar.store.config import StoreConfig
from sidecar.timing import now_us
from sidecar.vault.config import VaultConfig
from tests.conftest import Running, settings_for, start_server
from tests.waiting import wait_for

AGENT = "support"
ALICE = [
    "My dog is called Giruruka and he loves running on the beach",
    "I was born in Quelimane and moved to Porto when I was nine",
    "My locker code at the gym is Zanzibar-Thimble",
]
BOB = "My dog is called Rexford and he hides under the bed during thunder"
ALICE_NOTE = "Prefers invoices written in Portuguese, mailed to Rua Vandelinha"
ALICE_NOTE_BEFORE = "Prefers invoices written in Spanish, mailed to Calle Ostrowick"

Serve = Callable[..., Running]


@pytest.fixture
def serve(serve: Serve) -> Serve:
    """The capture tests' server, its vector search hnswlib from the first memory (so
    vectors.hnsw is written)."""
    hnsw = RetrievalConfig(vector=VectorConfig(exact_threshold=1))

    def start(vault: VaultConfig | None = None, **fields: object) -> Running:
        return serve(vault, hnsw, **fields)

    return start


def app_of(live: Running) -> App:
    return live.server.app


def say(live: Running, text: str, channel: str, user: str = "") -> None:
    live.injection.Inject(inj.InjectRequest(agent_id=AGENT, channel_id=channel, text=text,
                                            user_id=user))


def drained(live: Running) -> None:
    app_of(live).injector.capture.drain.flush()  # type: ignore[union-attr]


def data_files(data_dir: Path) -> dict[str, bytes]:
    return {str(p.relative_to(data_dir)): p.read_bytes()
            for p in sorted(data_dir.rglob("*")) if p.is_file()}


def holders(data_dir: Path, needle: bytes) -> list[str]:
    """The files under ``data_dir`` whose bytes hold ``needle`` (case-insensitive)."""
    return [name for name, data in data_files(data_dir).items()
            if needle.lower() in data.lower()]


def vector_bytes(app: App, memory_id: str) -> bytes:
    vector = app.memories.memories.embedding(memory_id)
    assert vector is not None
    return vector.tobytes()[:256]


def upsert(live: Running, content: str, user: str = "", memory_id: str = "") -> m.Memory:
    memory = m.Memory(id=memory_id, content=content, type=m.MEMORY_TYPE_PREFERENCE,
                      agent_id=AGENT, user_id=user)
    return live.store.UpsertMemory(s.UpsertMemoryRequest(memory=memory)).memory


def recall(live: Running, query: str, user: str) -> list[str]:
    hits = live.store.Search(s.SearchRequest(query=query, agent_id=AGENT, user_id=user,
                                             limit=10)).hits
    return [h.memory.content for h in hits]


def test_forget_user_leaves_no_byte_of_theirs_and_keeps_the_others(
        serve: Serve, config: ServerConfig, caplog: pytest.LogCaptureFixture) -> None:
    data_dir = Path(config.data_dir)
    live = serve(capture="user")
    for i, text in enumerate(ALICE):
        say(live, text, f"alice-{i % 2}", "alice")
    say(live, BOB, "bob-1", "bob")
    drained(live)
    note = upsert(live, ALICE_NOTE_BEFORE, "alice")
    upsert(live, ALICE_NOTE, "alice", note.id)  # its earlier text is in its history
    general = upsert(live, "The support desk opens at nine on weekdays")
    live.store.AddEdge(s.AddEdgeRequest(edge=m.Edge(
        source_id=note.id, target_id=general.id, relation=m.RELATION_RELATED_TO),
        agent_id=AGENT))
    [first] = [x for x in live.store.ListMemories(s.ListMemoriesRequest(
        agent_id=AGENT, user_id="alice")).memories if x.content == ALICE[0]]
    live.store.ForgetMemory(s.ForgetMemoryRequest(id=first.id, agent_id=AGENT))
    bob_id = next(x.id for x in live.store.ListMemories(s.ListMemoriesRequest(
        agent_id=AGENT, user_id="bob")).memories)
    live.close()  # the index files now hold everyone's vectors and terms

    live = serve(capture="user")
    app = app_of(live)
    assert app.vectors is not None and app.vectors.wait_ready()
    say(live, "What was the name of my dog again?", "alice-0", "alice")  # query context
    drained(live)
    alice_ids = [x.id for x in live.store.ListMemories(s.ListMemoriesRequest(
        agent_id=AGENT, user_id="alice", include_forgotten=True)).memories]
    alice_vectors = [vector_bytes(app, i) for i in alice_ids]
    bob_vector = vector_bytes(app, bob_id)
    assert holders(data_dir, b"Giruruka") and holders(data_dir, b"Ostrowick")
    before_bob = recall(live, "what is my dog called", "bob")

    with caplog.at_level(logging.INFO):
        gone = live.store.ForgetUser(s.ForgetUserRequest(agent_id=AGENT, user_id="alice"))
    assert (gone.memories, gone.edges, gone.channels) == (len(alice_ids), 1, 2)
    assert gone.versions >= len(alice_ids) + 2 and gone.captures >= len(ALICE)
    said = [r.getMessage() + repr(r.__dict__) for r in caplog.records
            if r.name.startswith("sidecar")]
    assert sum("user erased" in line for line in said) == 1
    assert not [line for line in said if "alice" in line or "Giruruka" in line]

    for text in [*ALICE, ALICE_NOTE, ALICE_NOTE_BEFORE, "What was the name of my dog"]:
        assert not holders(data_dir, text.encode()), text
    for word in (b"Giruruka", b"Quelimane", b"Thimble", b"Vandelinha", b"Ostrowick"):
        assert not holders(data_dir, word), word  # nor its terms in lexical.npz
    for vector in alice_vectors:
        assert not holders(data_dir, vector)
    assert holders(data_dir, BOB.encode())  # the scan sees what is there
    # the index files holding them are deleted, saved again at the next save (here: stop)
    assert not (data_dir / "vectors.hnsw").exists() and not (data_dir / "lexical.npz").exists()
    assert not live.injection.GetInjectionTrace(inj.GetInjectionTraceRequest(
        channel_id="alice-0", agent_id=AGENT)).turns

    assert recall(live, "what is my dog called", "bob") == before_bob
    assert not set(recall(live, "what is my dog called", "alice")) & {*ALICE, ALICE_NOTE}
    again = live.store.ForgetUser(s.ForgetUserRequest(agent_id=AGENT, user_id="alice"))
    assert (again.memories, again.versions, again.edges, again.captures,
            again.channels) == (0, 0, 0, 0, 0)
    live.close()

    for vector in alice_vectors:  # saved again at stop: without hers, with bob's
        assert not holders(data_dir, vector)
    assert not holders(data_dir, b"Giruruka")
    assert "vectors.hnsw" in holders(data_dir, bob_vector)
    assert "lexical.npz" in holders(data_dir, b"rexford")
    live = serve(capture="user")
    assert recall(live, "what is my dog called", "bob") == before_bob
    assert not set(recall(live, "what is my dog called", "alice")) & {*ALICE, ALICE_NOTE}
    assert not holders(data_dir, b"Giruruka")


def alice_and_bob(serve: Serve, alice_channel: str, bob_channel: str) -> Running:
    """A capturing sidecar where alice and bob each said one thing, captured."""
    live = serve(capture="user")
    say(live, ALICE[0], alice_channel, "alice")
    say(live, BOB, bob_channel, "bob")
    drained(live)
    return live


def test_forget_user_leaves_no_id_of_the_channels_they_spoke_in(
        serve: Serve, config: ServerConfig) -> None:
    data_dir = Path(config.data_dir)
    live = alice_and_bob(serve, "dm-alice-Zorvath", "dm-bob-Quintrell")
    db = app_of(live).db
    owned = "SELECT channel_id FROM channel_owners ORDER BY channel_id"
    assert [r[0] for r in db.execute(owned)] == ["dm-alice-Zorvath", "dm-bob-Quintrell"]
    live.store.ForgetUser(s.ForgetUserRequest(agent_id=AGENT, user_id="alice"))
    assert [r[0] for r in db.execute(owned)] == ["dm-bob-Quintrell"]
    assert not holders(data_dir, b"Zorvath")
    assert holders(data_dir, b"Quintrell")  # the scan sees what is there
    say(live, "Hello again", "dm-alice-Zorvath", "alice")  # the channel is the agent's again
    assert [r[0] for r in db.execute(owned)] == ["dm-alice-Zorvath", "dm-bob-Quintrell"]


def test_a_turn_of_the_user_committed_during_their_erasure_goes_with_it(
        serve: Serve, config: ServerConfig) -> None:
    data_dir = Path(config.data_dir)
    live = alice_and_bob(serve, "alice-0", "bob-1")
    repo = app_of(live).eraser.repo
    listed = repo.user_memories
    spoke: list[int] = []

    def alice_speaks_meanwhile(agent_id: str, user_id: str, limit: int) -> list[str]:
        if not spoke:  # once her captures went: a turn of hers in a channel of its own
            spoke.append(1)
            say(live, ALICE[1], "alice-late", "alice")
            drained(live)
        return listed(agent_id, user_id, limit)

    repo.user_memories = alice_speaks_meanwhile  # type: ignore[method-assign]
    live.store.ForgetUser(s.ForgetUserRequest(agent_id=AGENT, user_id="alice"))
    assert spoke
    drained(live)
    db = app_of(live).db
    assert db.execute("SELECT COUNT(*) FROM memories WHERE user_id = 'alice'")[0][0] == 0
    assert db.execute("SELECT COUNT(*) FROM captures WHERE user_id = 'alice'")[0][0] == 0
    for text in ALICE[:2]:
        assert not holders(data_dir, text.encode()), text
    assert not holders(data_dir, b"alice-late")
    assert holders(data_dir, BOB.encode())


def test_forget_user_needs_a_user(serve: Serve) -> None:
    live = serve()
    for agent in ("", AGENT):
        with pytest.raises(grpc.RpcError) as err:
            live.store.ForgetUser(s.ForgetUserRequest(agent_id=agent, user_id=""))
        assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert dict(err.value.trailing_metadata())["memsidecar-field"] == "user_id"


def test_forget_user_erases_a_user_of_a_sidecar_without_agent_ids(
        serve: Serve, config: ServerConfig) -> None:
    """Calls without ``agent_id`` (the shared scope) keep their users' memories and captures
    there; ForgetUser with an empty ``agent_id`` erases them, and nobody else's."""
    data_dir = Path(config.data_dir)
    live = serve(capture="user")
    live.injection.Inject(inj.InjectRequest(channel_id="kim-dm", text=ALICE[0], user_id="kim"))
    say(live, BOB, "bob-1", "kim")  # another agent's end user of the same id
    drained(live)
    live.store.UpsertMemory(s.UpsertMemoryRequest(memory=m.Memory(
        content=ALICE_NOTE, type=m.MEMORY_TYPE_PREFERENCE, user_id="kim")))
    assert len(live.store.ListMemories(s.ListMemoriesRequest(user_id="kim")).memories) == 2

    gone = live.store.ForgetUser(s.ForgetUserRequest(agent_id="", user_id="kim"))
    assert (gone.memories, gone.captures, gone.channels) == (2, 1, 1)
    assert not live.store.ListMemories(s.ListMemoriesRequest(user_id="kim")).memories
    for text in (ALICE[0], ALICE_NOTE):
        assert not holders(data_dir, text.encode()), text
    assert [x.content for x in live.store.ListMemories(s.ListMemoriesRequest(
        agent_id=AGENT, user_id="kim")).memories] == [BOB]


def test_hard_forget_memory_leaves_no_byte(serve: Serve, config: ServerConfig) -> None:
    data_dir = Path(config.data_dir)
    live = serve()
    note = upsert(live, ALICE_NOTE_BEFORE)
    upsert(live, ALICE_NOTE, memory_id=note.id)
    kept = upsert(live, "The support desk opens at nine on weekdays")
    live.store.AddEdge(s.AddEdgeRequest(edge=m.Edge(
        source_id=note.id, target_id=kept.id, relation=m.RELATION_RELATED_TO), agent_id=AGENT))
    say(live, "Where should the invoices be mailed?", "c1")  # injected: in the buffer
    live.close()
    live = serve()
    app = app_of(live)
    assert app.vectors is not None and app.vectors.wait_ready()
    vector = vector_bytes(app, note.id)
    reply = live.store.ForgetMemory(s.ForgetMemoryRequest(id=note.id, agent_id=AGENT,
                                                          hard=True))
    assert reply.changed and reply.memory.forgotten
    for needle in (b"Vandelinha", b"Ostrowick", vector):
        assert not holders(data_dir, needle), needle
    assert holders(data_dir, b"support desk opens")
    with pytest.raises(grpc.RpcError) as err:
        live.store.ForgetMemory(s.ForgetMemoryRequest(id=note.id, agent_id=AGENT, hard=True))
    assert err.value.code() == grpc.StatusCode.NOT_FOUND


def captured(live: Running, user: str) -> list[str]:
    listed = live.store.ListMemories(s.ListMemoriesRequest(
        agent_id=AGENT, user_id=user, source="capture", include_forgotten=True))
    return sorted(x.content for x in listed.memories)


def where(db: object, word: str) -> list[str]:
    """The tables with a text column holding ``word``."""
    found = []
    for table, column in (("memories", "content"), ("memory_versions", "content"),
                          ("captures", "content"), ("captures", "context"),
                          ("injection_context", "text")):
        rows = db.execute(f"SELECT 1 FROM {table} WHERE {column} LIKE ?",  # type: ignore[attr-defined]
                          (f"%{word}%",))
        if rows:
            found.append(table)
    return found


def test_retention_erases_the_oldest_captures(serve: Serve, config: ServerConfig) -> None:
    live = serve(capture="user", capture_max_per_user=2)
    turns = [f"Reminder number {n}: my parcel {word} arrives soon" for n, word in
             enumerate(("Ambrosius", "Bellweather", "Cortazzi", "Drummelow"))]
    for text in turns:
        say(live, text, "alice-1", "alice")
        drained(live)  # one after the other: their ages follow the turns
    say(live, BOB, "bob-1", "bob")
    drained(live)
    app = app_of(live)
    done = retention_once(app.eraser, app.live.get().injection_for)
    assert done.memories == 2
    assert captured(live, "alice") == sorted(turns[2:])
    assert captured(live, "bob") == [BOB]  # one user's rule never touches another's
    db = app.db
    for word in ("Ambrosius", "Bellweather"):
        assert not holders(Path(config.data_dir), word.encode()) or where(db, word) == [
            "injection_context"]  # the channel's last turns: its own bound, not a capture
    assert retention_once(app.eraser, app.live.get().injection_for).memories == 0


def test_retention_erases_captures_older_than_the_ttl(serve: Serve) -> None:
    live = serve(capture="user", capture_ttl_days=30)
    say(live, BOB, "bob-1", "bob")
    drained(live)
    app = app_of(live)
    config_for = app.live.get().injection_for
    assert retention_once(app.eraser, config_for).memories == 0  # not old yet
    later = retention_once(app.eraser, config_for, now=now_us() + 31 * DAY_US)
    assert later.memories == 1 and later.captures >= 1
    assert captured(live, "bob") == []


def test_a_full_scope_still_takes_an_explicit_write(serve: Serve) -> None:
    live = serve(vault=VaultConfig(max_memories_per_scope=3), capture="user")
    for text in ALICE:
        say(live, text, "alice-1", "alice")
    drained(live)
    assert len(captured(live, "alice")) == 3  # the scope is full of captures
    stored = upsert(live, "Escalations go to the on-call engineer first")
    assert stored.id
    assert captured(live, "alice") == sorted(ALICE[1:])  # the oldest made room
    say(live, "My favourite tea is smoked lapsang souchong", "alice-1", "alice")
    drained(live)  # a capture never makes room: refused in a full scope
    assert captured(live, "alice") == sorted(ALICE[1:])
    upsert(live, "Refunds above 500 euros need a manager")
    upsert(live, "Invoices are sent on the first day of the month")
    assert captured(live, "alice") == []
    with pytest.raises(grpc.RpcError) as err:  # no capture left to make room
        upsert(live, "The office is closed on public holidays")
    assert err.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED


def test_forget_user_on_postgres_removes_the_rows(config: ServerConfig, embedder: Embedder,
                                                   pg_dsn: str) -> None:
    settings = settings_for(config, store=StoreConfig(backend="postgres", dsn=pg_dsn),
                            defaults=MemoryInjectionConfig(capture="user"))
    live = start_server(config, embedder, settings)
    other = replace(config, data_dir=f"{config.data_dir}-peer")
    peer = App.open(other, embedder=embedder, settings=settings_for(
        other, store=StoreConfig(backend="postgres", dsn=pg_dsn)))
    try:
        for i, text in enumerate(ALICE):
            say(live, text, f"alice-{i}", "alice")
        say(live, BOB, "bob-1", "bob")
        drained(live)
        upsert(live, ALICE_NOTE, "alice")
        ids = [x.id for x in live.store.ListMemories(s.ListMemoriesRequest(
            agent_id=AGENT, user_id="alice")).memories]
        wait_for(lambda: all(peer.retriever.live.seq_of(i) is not None for i in ids))
        gone = live.store.ForgetUser(s.ForgetUserRequest(agent_id=AGENT, user_id="alice"))
        # the other sidecar's indexes drop them too, through the change feed
        wait_for(lambda: all(peer.retriever.live.seq_of(i) is None for i in ids))
        assert gone.memories == len(ALICE) + 1 and gone.channels == len(ALICE)
        db = app_of(live).db
        for table, column in (("memories", "content"), ("memory_versions", "content"),
                              ("captures", "content"), ("injection_context", "text")):
            rows = db.execute(f"SELECT {column} FROM {table}")
            assert not [r for r in rows if "Giruruka" in str(r[0])], table
        assert db.execute("SELECT count(*) FROM memories WHERE user_id = 'bob'")[0][0] == 1
        assert not db.execute("SELECT 1 FROM channel_speakers WHERE user_id = 'alice'")
        assert recall(live, "what is my dog called", "bob")[0] == BOB
    finally:
        peer.close()
        live.close()


def test_the_channel_sweep_runs_retention_after_each_sweep(serve: Serve) -> None:
    app = app_of(serve())
    ran = threading.Event()
    sweeper = ChannelSweeper(app.owners, app.injector.reset,
                             Live.fixed(ChannelStateConfig(sweep_interval_s=1)), ran.set)
    sweeper.start()
    try:
        assert ran.wait(30)
    finally:
        sweeper.close()


def test_a_memory_erased_while_an_inject_holds_it_is_not_written_by_the_turn(
        serve: Serve) -> None:
    """A hard ForgetMemory between an Inject's choice of the memory and its commit: the
    turn's rows (ids, buffer, the reply kept for a retry) never name it, nor does the memory
    copy a retry of the turn reads."""
    live = serve()
    note = upsert(live, ALICE_NOTE)
    app = app_of(live)
    established = app.injector.retriever.established
    got, go = threading.Event(), threading.Event()

    def held(ids: list[str]) -> None:  # the commit point, the block built
        if not got.is_set():
            got.set()
            assert go.wait(30)
        established(ids)

    app.injector.retriever.established = held  # type: ignore[method-assign]
    replies: list[inj.InjectResponse] = []
    call = threading.Thread(target=lambda: replies.append(live.injection.Inject(
        inj.InjectRequest(agent_id=AGENT, channel_id="c1",
                          text="Where should the invoices be mailed?"))), daemon=True)
    call.start()
    assert got.wait(30)
    live.store.ForgetMemory(s.ForgetMemoryRequest(id=note.id, agent_id=AGENT, hard=True))
    go.set()
    call.join(30)
    assert len(replies) == 1 and "Vandelinha" not in replies[0].block  # built again
    db = app.db
    for table in ("injection_ids", "injection_buffer"):
        assert not db.execute(f"SELECT 1 FROM {table} WHERE memory_id = ?", (note.id,)), table
    assert not db.execute("SELECT 1 FROM injection_replies WHERE reply LIKE '%Vandelinha%'")
    retried = live.injection.Inject(inj.InjectRequest(
        agent_id=AGENT, channel_id="c1", text="Where should the invoices be mailed?",
        turn=replies[0].turn))
    assert "Vandelinha" not in retried.block and note.id not in [i.id for i in retried.items]


def test_forget_user_of_the_shared_scope_on_postgres(config: ServerConfig, embedder: Embedder,
                                                      pg_dsn: str) -> None:
    live = start_server(config, embedder, settings_for(
        config, store=StoreConfig(backend="postgres", dsn=pg_dsn),
        defaults=MemoryInjectionConfig(capture="user")))
    try:
        live.injection.Inject(inj.InjectRequest(channel_id="kim-dm", text=ALICE[0],
                                                user_id="kim"))
        say(live, BOB, "bob-1", "kim")
        drained(live)
        gone = live.store.ForgetUser(s.ForgetUserRequest(agent_id="", user_id="kim"))
        assert (gone.memories, gone.captures, gone.channels) == (1, 1, 1)
        db = app_of(live).db
        assert not db.execute("SELECT 1 FROM memories WHERE content LIKE '%Giruruka%'")
        assert not db.execute("SELECT 1 FROM captures WHERE agent_id = '' AND user_id = 'kim'")
        assert recall(live, "what is my dog called", "kim")[0] == BOB
    finally:
        live.close()
