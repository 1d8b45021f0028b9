"""Authentication on: tokens, the agent from the token, shared writes, operator-only calls."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from memsidecar.v1 import injection_pb2 as inj
from memsidecar.v1 import memory_pb2 as m
from memsidecar.v1 import settings_pb2 as st
from memsidecar.v1 import store_pb2 as s
from memsidecar.v1 import store_pb2_grpc
from memsidecar.v1 import vault_pb2 as v
from memsidecar_client import Client

from sidecar.api.server import create_server
from sidecar.api.server_config import ServerConfig
from sidecar.app import App
from sidecar.auth.config import AuthConfig
from sidecar.auth.identity import AGENT, OPERATOR
from sidecar.auth.tokens import TokenStore
from sidecar.embedding import Embedder
from sidecar.metrics.config import HttpConfig
from tests.conftest import Running

Call = Callable[..., object]


class Authed:
    def __init__(self, live: Running, tokens: dict[str, str]) -> None:
        self.live, self.tokens = live, tokens
        self.stub = live.store

    def as_(self, who: str) -> tuple[tuple[str, str], ...]:
        return (("authorization", f"Bearer {self.tokens[who]}"),)


@pytest.fixture
def authed(tmp_path: Path, embedder: Embedder) -> Iterator[Authed]:
    data = tmp_path / "data"
    store = TokenStore(data)
    tokens = {"alice": store.add(AGENT, "alice")[0], "bob": store.add(AGENT, "bob")[0],
              "op": store.add(OPERATOR)[0]}
    config = ServerConfig(listen="127.0.0.1:0", data_dir=str(data),
                          auth=AuthConfig(enabled=True), http=HttpConfig(listen=""))
    server = create_server(App.open(config, embedder=embedder))
    server.start()
    live = Running(server)
    yield Authed(live, tokens)
    live.close()


def code(call: Callable[[], object]) -> grpc.StatusCode:
    with pytest.raises(grpc.RpcError) as info:
        call()
    return info.value.code()  # type: ignore[attr-defined, no-any-return]


def upsert(a: Authed, who: str, content: str, agent: str = "") -> m.Memory:
    return a.stub.UpsertMemory(s.UpsertMemoryRequest(memory=m.Memory(
        content=content, type=m.MEMORY_TYPE_FACT, agent_id=agent)), metadata=a.as_(who)).memory


def test_no_or_wrong_token_is_unauthenticated_and_health_stays_open(authed: Authed) -> None:
    search = s.SearchRequest(query="tea")
    assert code(lambda: authed.stub.Search(search)) == grpc.StatusCode.UNAUTHENTICATED
    forged = (("authorization", "Bearer msk_00000000_" + "x" * 43),)
    assert code(lambda: authed.stub.Search(search, metadata=forged)) == \
        grpc.StatusCode.UNAUTHENTICATED
    health = health_pb2_grpc.HealthStub(authed.live.channel)
    assert health.Check(health_pb2.HealthCheckRequest()).status == \
        health_pb2.HealthCheckResponse.SERVING
    authed.stub.Search(search, metadata=authed.as_("alice"))


def test_the_agent_comes_from_the_token(authed: Authed) -> None:
    mine = upsert(authed, "alice", "Alice keeps the spare key under the mat", "alice")
    assert mine.agent_id == "alice"
    denied = grpc.StatusCode.PERMISSION_DENIED
    assert code(lambda: upsert(authed, "alice", "Bob owes Alice lunch", "bob")) == denied
    assert code(lambda: authed.stub.Search(s.SearchRequest(
        query="spare key", agent_id="bob"), metadata=authed.as_("alice"))) == denied
    # An empty agent_id on a read is the token's agent: alice sees her own memory...
    hits = authed.stub.Search(s.SearchRequest(query="spare key mat"),
                              metadata=authed.as_("alice")).hits
    assert mine.id in {h.memory.id for h in hits}
    # ...and bob, whatever he sends, does not.
    hits = authed.stub.Search(s.SearchRequest(query="spare key mat"),
                              metadata=authed.as_("bob")).hits
    assert mine.id not in {h.memory.id for h in hits}
    assert code(lambda: authed.stub.GetMemory(s.GetMemoryRequest(id=mine.id),
                                              metadata=authed.as_("bob"))) == \
        grpc.StatusCode.NOT_FOUND
    assert code(lambda: authed.stub.ForgetMemory(s.ForgetMemoryRequest(id=mine.id),
                                                 metadata=authed.as_("bob"))) == \
        grpc.StatusCode.NOT_FOUND
    assert authed.stub.ForgetMemory(s.ForgetMemoryRequest(id=mine.id),
                                    metadata=authed.as_("alice")).changed


def test_shared_writes_and_operator_calls_need_the_operator(authed: Authed) -> None:
    denied = grpc.StatusCode.PERMISSION_DENIED
    assert code(lambda: upsert(authed, "alice", "The office opens at nine")) == denied
    shared = upsert(authed, "op", "The office opens at nine")
    assert shared.agent_id == ""
    assert code(lambda: authed.stub.ForgetMemory(s.ForgetMemoryRequest(id=shared.id),
                                                 metadata=authed.as_("alice"))) == denied
    stats = v.VaultStatsRequest()
    assert code(lambda: authed.live.vault.VaultStats(stats, metadata=authed.as_("alice"))) == \
        denied
    assert authed.live.vault.VaultStats(stats, metadata=authed.as_("op")).live == 1
    off = st.MemoryInjectionConfig(enabled=False)
    assert code(lambda: authed.live.settings.UpdateConfig(st.UpdateConfigRequest(
        memory_injection=off), metadata=authed.as_("alice"))) == denied
    assert code(lambda: authed.live.settings.UpdateConfig(st.UpdateConfigRequest(
        agent_id="bob", memory_injection=off), metadata=authed.as_("alice"))) == denied
    own = authed.live.settings.UpdateConfig(st.UpdateConfigRequest(
        agent_id="alice", memory_injection=off), metadata=authed.as_("alice"))
    assert own.agent_id == "alice" and not own.memory_injection.enabled
    # The operator may act for any agent.
    assert upsert(authed, "op", "Bob's desk is by the window", "bob").agent_id == "bob"


def test_revoked_tokens_stop_working_and_the_python_client_sends_its_token(
        authed: Authed) -> None:
    with Client(authed.live.target, token=authed.tokens["alice"]) as client:
        client.search("anything")
    store = TokenStore(authed.live.server.app.config.data_dir)
    alice = next(e for e in store.entries() if e.agent_id == "alice")
    store.revoke(alice.id)
    assert code(lambda: authed.stub.Search(s.SearchRequest(query="x"),
                                           metadata=authed.as_("alice"))) == \
        grpc.StatusCode.UNAUTHENTICATED
    assert all(e.sha256 not in authed.tokens.values() for e in store.entries())
    assert "msk_" not in Path(store.path).read_text()


def test_imports_follow_the_same_rules(authed: Authed) -> None:
    items = [s.UpsertMemoryRequest(memory=m.Memory(content=text, type=m.MEMORY_TYPE_FACT,
                                                   agent_id=agent))
             for text, agent in (("Alice likes jazz", "alice"), ("Bob likes rock", "bob"),
                                 ("Everyone likes cake", ""))]
    reply = authed.stub.ImportMemories(iter(items), metadata=authed.as_("alice"))
    assert reply.stored == 1 and [e.index for e in reply.errors] == [1, 2]
    assert {e.code for e in reply.errors} == {"PERMISSION_DENIED"}


def test_remote_listen_without_auth_is_refused(tmp_path: Path, embedder: Embedder,
                                               caplog: pytest.LogCaptureFixture) -> None:
    config = ServerConfig(listen="0.0.0.0:0", data_dir=str(tmp_path / "d"),
                          http=HttpConfig(listen=""))
    app = App.open(config, embedder=embedder)
    try:
        with pytest.raises(OSError, match="allow_insecure_remote"):
            create_server(app)
    finally:
        app.close()
    risky = replace(config, auth=AuthConfig(allow_insecure_remote=True))
    app = App.open(risky, embedder=embedder)
    try:
        server = create_server(app)
        assert any(r.levelname == "WARNING" and "without authentication" in r.getMessage()
                   for r in caplog.records)
        channel = grpc.insecure_channel(f"127.0.0.1:{server.port}")
        server.start()
        store_pb2_grpc.MemoryStoreStub(channel).ListMemories(s.ListMemoriesRequest())
        channel.close()
    finally:
        server.stop(grace=0)


def test_injection_trace_reads_own_channels_or_any_with_the_operator(authed: Authed) -> None:
    upsert(authed, "alice", "Alice keeps the spare key under the mat", "alice")
    authed.live.injection.Inject(inj.InjectRequest(channel_id="alice-chat",
                                                   text="where is the spare key?"),
                                 metadata=authed.as_("alice"))
    request = inj.GetInjectionTraceRequest(channel_id="alice-chat")
    trace = authed.live.injection.GetInjectionTrace
    assert len(trace(request, metadata=authed.as_("alice")).turns) == 1
    assert len(trace(request, metadata=authed.as_("op")).turns) == 1
    assert code(lambda: trace(request, metadata=authed.as_("bob"))) == \
        grpc.StatusCode.PERMISSION_DENIED
    assert code(lambda: trace(inj.GetInjectionTraceRequest(channel_id="alice-chat",
                                                           agent_id="alice"),
                              metadata=authed.as_("bob"))) == grpc.StatusCode.PERMISSION_DENIED
    assert code(lambda: trace(request)) == grpc.StatusCode.UNAUTHENTICATED


def test_pruning_reaches_only_own_channels(authed: Authed) -> None:
    upsert(authed, "alice", "Alice keeps the spare key under the mat", "alice")

    def inject() -> int:
        return len(authed.live.injection.Inject(inj.InjectRequest(
            channel_id="alice-chat", text="where is the spare key?"),
            metadata=authed.as_("alice")).items)

    assert inject() == 1
    prune = authed.live.injection.PruneHistory
    for request in (inj.PruneHistoryRequest(channel_id="alice-chat"),
                    inj.PruneHistoryRequest(channel_id="alice-chat", agent_id="alice")):
        assert code(lambda r=request: prune(r, metadata=authed.as_("bob"))) == \
            grpc.StatusCode.PERMISSION_DENIED  # type: ignore[misc]
    assert inject() == 0  # still in cooldown
    assert list(prune(inj.PruneHistoryRequest(channel_id="alice-chat"),
                      metadata=authed.as_("alice")).released_turns) == [1]
    assert inject() == 1


def test_an_agent_token_erases_its_own_users_never_the_shared_scopes(authed: Authed) -> None:
    """ForgetUser with an empty agent_id: the token's agent for an agent token, the shared
    scope (calls made without an agent) for the operator."""
    for who, agent in (("op", ""), ("op", "alice")):
        authed.stub.UpsertMemory(s.UpsertMemoryRequest(memory=m.Memory(
            content=f"Kim parks in spot {len(agent) + 7} of the garage", agent_id=agent,
            type=m.MEMORY_TYPE_FACT, user_id="kim")), metadata=authed.as_(who))

    def kims(agent: str) -> int:  # an agent's listing holds the shared scope's too
        return sum(x.agent_id == agent for x in authed.stub.ListMemories(s.ListMemoriesRequest(
            agent_id=agent, user_id="kim"), metadata=authed.as_("op")).memories)

    gone = authed.stub.ForgetUser(s.ForgetUserRequest(user_id="kim"),
                                  metadata=authed.as_("alice"))
    assert gone.memories == 1 and kims("alice") == 0 and kims("") == 1
    gone = authed.stub.ForgetUser(s.ForgetUserRequest(user_id="kim"), metadata=authed.as_("op"))
    assert gone.memories == 1 and kims("") == 0
