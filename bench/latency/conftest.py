"""A real sidecar serving the cached 10,000-memory store, and the Python client on it."""

from __future__ import annotations

import os
from collections.abc import Iterator

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import pytest
from memsidecar_client import Client

from bench.latency.dataset import cached_store, working_copy
from bench.latency.helpers import MEMORIES
from sidecar.api.server import Server, create_server
from sidecar.api.server_config import ServerConfig
from sidecar.app import App
from sidecar.embedding import Embedder, bundled_model_files
from sidecar.metrics.config import HttpConfig


@pytest.fixture(scope="session")
def embedder() -> Embedder:
    return Embedder(bundled_model_files(verify=True), **ServerConfig().embedder_options())


@pytest.fixture(scope="session")
def probe(tmp_path_factory: pytest.TempPathFactory, embedder: Embedder) -> Iterator[Client]:
    """A client on an empty server: tells which RPCs exist before the 10k store is built."""
    config = ServerConfig(listen="127.0.0.1:0", data_dir=str(tmp_path_factory.mktemp("probe")),
                          http=HttpConfig(listen=""))
    live = create_server(App.open(config, embedder=embedder))
    live.start()
    with Client(f"127.0.0.1:{live.port}") as c:
        yield c
    live.stop(grace=1)


@pytest.fixture(scope="session")
def server(tmp_path_factory: pytest.TempPathFactory, embedder: Embedder) -> Iterator[Server]:
    cached = cached_store(MEMORIES, embedder)
    config = working_copy(cached, tmp_path_factory.mktemp("latency") / "data")
    live = create_server(App.open(config, embedder=embedder))
    live.start()
    yield live
    live.stop(grace=1)


@pytest.fixture(scope="session")
def client(server: Server) -> Iterator[Client]:
    with Client(f"127.0.0.1:{server.port}", timeout_s=30) as c:
        yield c


@pytest.fixture(scope="session")
def target(server: Server) -> str:
    return f"127.0.0.1:{server.port}"
