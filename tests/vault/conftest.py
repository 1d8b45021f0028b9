"""Vault fixtures: a real server with a chosen VaultConfig, and small gRPC helpers."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import replace

import grpc
import pytest
from memsidecar.v1 import memory_pb2 as m
from memsidecar.v1 import store_pb2 as s
from memsidecar.v1 import vault_pb2 as v

from sidecar.api.server import create_server
from sidecar.api.server_config import ServerConfig
from sidecar.app import App
from sidecar.embedding import Embedder
from sidecar.metrics.config import HttpConfig
from sidecar.vault import VaultConfig
from tests.conftest import Running, settings_for

StartVault = Callable[..., Running]


@pytest.fixture
def start_vault(config: ServerConfig, embedder: Embedder) -> Iterator[StartVault]:
    """Start a server whose vault uses ``VaultConfig(**overrides)``; stopped after the test."""
    started: list[Running] = []

    def start(**overrides: object) -> Running:
        settings = settings_for(config, vault=VaultConfig(**overrides))  # type: ignore[arg-type]
        own = replace(config, listen="127.0.0.1:0",  # one data dir per server (it locks it)
                      data_dir=f"{config.data_dir}/{len(started)}")
        app = App.open(own, embedder=embedder, settings=settings)
        server = create_server(app)
        server.start()
        started.append(Running(server))
        return started[-1]

    yield start
    for live in started:
        live.close()


def upsert(live: Running, content: str, type_: int = m.MEMORY_TYPE_FACT,
           **kw: object) -> s.UpsertMemoryResponse:
    return live.store.UpsertMemory(s.UpsertMemoryRequest(memory=m.Memory(
        content=content, type=type_, **kw)))  # type: ignore[arg-type]


def rpc_error(call: Callable[[], object]) -> grpc.RpcError:
    with pytest.raises(grpc.RpcError) as info:
        call()
    return info.value


def trailers(err: grpc.RpcError) -> dict[str, str]:
    return dict(err.trailing_metadata())  # type: ignore[attr-defined]


def stats(live: Running) -> v.VaultStatsResponse:
    return live.vault.VaultStats(v.VaultStatsRequest())


def history(live: Running, memory_id: str, agent_id: str = "") -> list[v.MemoryVersion]:
    return list(live.vault.GetMemoryHistory(
        v.GetMemoryHistoryRequest(id=memory_id, agent_id=agent_id)).versions)


@pytest.fixture(scope="module")
def vault_live(tmp_path_factory: pytest.TempPathFactory, embedder: Embedder) -> Iterator[Running]:
    """One default-config server per test module; tests isolate themselves by agent_id."""
    data = tmp_path_factory.mktemp("vault")
    app = App.open(ServerConfig(listen="127.0.0.1:0", data_dir=str(data),
                                http=HttpConfig(listen="")), embedder=embedder)
    server = create_server(app)
    server.start()
    live = Running(server)
    yield live
    live.close()
