"""/metrics over HTTP from a real server: counters move by exactly the calls made."""

from __future__ import annotations

import logging
import socket
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from memsidecar.v1 import memory_pb2 as m
from memsidecar.v1 import store_pb2 as s
from prometheus_client.parser import text_string_to_metric_families

from sidecar.api.server import HTTP_HEALTH, create_server
from sidecar.api.server_config import ServerConfig
from sidecar.app import App
from sidecar.auth.config import AuthConfig
from sidecar.auth.identity import AGENT, OPERATOR
from sidecar.auth.tokens import TokenStore
from sidecar.embedding import Embedder
from sidecar.metrics.config import HttpConfig
from sidecar.metrics.http import HttpListenError
from tests.conftest import Running
from tests.injection.helpers import inject, put

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


def serve(config: ServerConfig, embedder: Embedder, http: str) -> Running:
    config = replace(config, listen="127.0.0.1:0", http=HttpConfig(listen=http))
    server = create_server(App.open(config, embedder=embedder))
    server.start()
    return Running(server)


def scrape(live: Running, token: str = "") -> Samples:
    assert live.server.http is not None
    request = urllib.request.Request(f"http://127.0.0.1:{live.server.http.port}/metrics")
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    with urllib.request.urlopen(request) as reply:
        text = reply.read().decode()
    return {(sample.name, frozenset(sample.labels.items())): sample.value
            for family in text_string_to_metric_families(text) for sample in family.samples}


def value(samples: Samples, name: str, **labels: str) -> float:
    return samples.get((name, frozenset(labels.items())), 0.0)


@pytest.fixture
def live(config: ServerConfig, embedder: Embedder) -> Iterator[Running]:
    running = serve(config, embedder, "127.0.0.1:0")
    yield running
    running.close()


def test_counters_move_by_the_calls_made(live: Running) -> None:
    before = scrape(live)
    for i in range(3):
        put(live, f"the deploy runs on friday number {i}", agent_id="ada")
    live.store.Search(s.SearchRequest(query="deploy friday", agent_id="ada"))
    for turn in range(2):
        inject(live, "when is the deploy?", channel="c1", turn=turn, agent_id="ada")
    with pytest.raises(grpc.RpcError) as bad:
        live.store.UpsertMemory(s.UpsertMemoryRequest())
    assert bad.value.code() == grpc.StatusCode.INVALID_ARGUMENT  # type: ignore[attr-defined]
    with pytest.raises(grpc.RpcError):  # a journal-tier memory: refused by a write gate
        put(live, "heartbeat ok", tier=m.TIER_LOG)
    health_pb2_grpc.HealthStub(live.channel).Check(health_pb2.HealthCheckRequest())
    after = scrape(live)

    def moved(name: str, **labels: str) -> float:
        return value(after, name, **labels) - value(before, name, **labels)

    calls = "memsidecar_rpc_duration_seconds_count"
    assert moved(calls, method="UpsertMemory", code="OK") == 3
    assert moved(calls, method="UpsertMemory", code="INVALID_ARGUMENT") == 1
    assert moved(calls, method="UpsertMemory", code="FAILED_PRECONDITION") == 1
    assert moved(calls, method="Search", code="OK") == 1
    assert moved(calls, method="Inject", code="OK") == 2
    assert not any(name == calls and dict(labels).get("method") == "Check"
                   for name, labels in after)  # health checks are not counted
    assert moved("memsidecar_write_rejections_total", reason="LOG_TIER") == 1
    assert moved("memsidecar_inject_stage_seconds_count", stage="embed") == 2
    assert moved("memsidecar_inject_stage_seconds_count", stage="persist") == 2
    blocks = moved("memsidecar_inject_block_items_count")
    skips = sum(v - value(before, n, **dict(k)) for (n, k), v in after.items()
                if n == "memsidecar_inject_skips_total")
    assert blocks + skips == 2 and blocks >= 1
    assert value(after, "memsidecar_memories", agent="ada", type="fact", tier="canon") == 3
    assert value(after, "memsidecar_vector_index_engine", engine="exact") == 1
    assert value(after, "memsidecar_vector_index_vectors") == 3
    assert value(after, "memsidecar_open_channels") == 1
    assert value(after, "process_resident_memory_bytes") > 0


def http_health(live: Running) -> int:
    check = health_pb2_grpc.HealthStub(live.channel).Check(
        health_pb2.HealthCheckRequest(service=HTTP_HEALTH))
    return int(check.status)


def test_health_reports_whether_the_http_endpoint_is_up(live: Running, config: ServerConfig,
                                                        embedder: Embedder) -> None:
    assert http_health(live) == health_pb2.HealthCheckResponse.SERVING
    off = serve(replace(config, data_dir=f"{config.data_dir}-off"), embedder, "")
    try:
        assert off.server.http is None
        assert http_health(off) == health_pb2.HealthCheckResponse.NOT_SERVING
    finally:
        off.close()


def test_bm25_segments_follow_writes_and_merges(live: Running) -> None:
    lexical = live.server.app.retriever.lexical  # type: ignore[attr-defined]
    lexical.merge()
    before = scrape(live)
    assert value(before, "memsidecar_bm25_segments") == lexical.segment_count
    for i in range(3):
        put(live, f"segment test note number {i} about the lexical index")
    after = scrape(live)
    assert value(after, "memsidecar_bm25_documents") == value(before,
                                                              "memsidecar_bm25_documents") + 3
    assert value(after, "memsidecar_bm25_segments") == lexical.segment_count > 1
    lexical.merge()
    assert value(scrape(live), "memsidecar_bm25_segments") == 1


def test_operations_doc_lists_every_metric(live: Running) -> None:
    doc = (Path(__file__).parents[2] / "docs" / "operations.md").read_text()
    names = live.server.app.metrics.names()
    assert len(names) >= 12
    assert [n for n in names if f"`{n}`" not in doc] == []


def test_busy_port_refuses_the_start(config: ServerConfig, embedder: Embedder) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        busy = f"127.0.0.1:{taken.getsockname()[1]}"
        config = replace(config, listen="127.0.0.1:0", http=HttpConfig(listen=busy))
        app = App.open(config, embedder=embedder)
        try:
            with pytest.raises(HttpListenError) as refused:
                create_server(app)
        finally:
            app.close()
    message = str(refused.value)
    assert "\n" not in message and busy in message and "--http-listen" in message


def test_off_logs_no_warning(config: ServerConfig, embedder: Embedder,
                             caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING):
        running = serve(config, embedder, "")
    try:
        assert running.server.http is None
        assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == []
    finally:
        running.close()


def test_auth_on_needs_the_operator_token(tmp_path: Path, embedder: Embedder) -> None:
    data = tmp_path / "data"
    tokens = TokenStore(data)
    operator, agent = tokens.add(OPERATOR)[0], tokens.add(AGENT, "ada")[0]
    config = ServerConfig(data_dir=str(data), auth=AuthConfig(enabled=True))
    running = serve(config, embedder, "127.0.0.1:0")
    try:
        for token in ("", agent, "msk_00000000_wrong"):
            with pytest.raises(urllib.error.HTTPError) as refused:
                scrape(running, token)
            assert refused.value.code == 401
        assert ("memsidecar_rpc_refusals_total", frozenset()) in scrape(running, operator)
    finally:
        running.close()


def test_config_reloads_counted_by_result(live: Running) -> None:
    settings = live.server.app.settings
    settings.path.write_text("[injection]\nsweep_interval_s = 30\n")
    assert settings.reload()
    settings.path.write_text("[injection]\nsweep_interval_s = -1\n")
    assert not settings.reload()
    after = scrape(live)
    assert value(after, "memsidecar_config_reloads_total", result="ok") == 1
    assert value(after, "memsidecar_config_reloads_total", result="failed") == 1
