"""Shared fixtures: the real model once per session, real SQLite files, a real server on port 0."""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import grpc
import pytest
from memsidecar.v1 import injection_pb2_grpc, settings_pb2_grpc, store_pb2_grpc, vault_pb2_grpc

from sidecar.api.server import Server, create_server
from sidecar.api.server_config import ServerConfig
from sidecar.app import App
from sidecar.config import CONFIG_FILENAME, Config, ConfigStore
from sidecar.embedding import Embedder
from sidecar.embedding.config import EmbeddingConfig
from sidecar.embedding.models import model_files
from sidecar.metrics.config import HttpConfig
from sidecar.store.contract import SqlStore
from sidecar.store.db import Database
from sidecar.store.postgres.db import PgDatabase
from tests.pg.cluster import Cluster
from tests.small_disk import in_namespaces


@pytest.fixture(scope="session")
def embedder() -> Embedder:
    """The default [embedding] model (what App.open uses on a fresh store)."""
    name = EmbeddingConfig().model
    return Embedder(model_files(name, verify=True),
                    **ServerConfig().embedder_options())  # type: ignore[arg-type]


@pytest.fixture(scope="session")
def pg_cluster() -> Iterator[Cluster]:
    """One throwaway PostgreSQL for the session; a failure to start fails the tests using it."""
    cluster = Cluster()
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.remove()


@pytest.fixture
def pg_dsn(pg_cluster: Cluster) -> str:
    """A fresh, empty database of the session's cluster."""
    return pg_cluster.new_database()


@pytest.fixture(params=["sqlite", "postgres"])
def store_db(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[SqlStore]:
    """An empty, migrated store of each backend (the store contract's suites run on both)."""
    db: SqlStore
    if request.param == "postgres":
        db = PgDatabase(request.getfixturevalue("pg_dsn"))
    else:
        db = Database(tmp_path / "store.sqlite3")
    yield db
    db.close()


@pytest.fixture
def config(tmp_path: Path) -> ServerConfig:
    return ServerConfig(listen="127.0.0.1:0", data_dir=str(tmp_path / "data"),
                        http=HttpConfig(listen=""))


def settings_for(config: ServerConfig, **sections: Any) -> ConfigStore:
    """A config store holding ``Config(**sections)`` for ``App.open``. No file is written: it
    stands for the data dir's config file as it is now (none, or ``on_postgres``'s), so a
    server's watcher reloads the file only when a test edits it afterwards."""
    path = Path(config.data_dir) / CONFIG_FILENAME
    text = path.read_text(encoding="utf-8") if path.exists() else None
    return ConfigStore(path, Config(**sections), text)


@pytest.fixture
def app(config: ServerConfig, embedder: Embedder) -> Iterator[App]:
    application = App.open(config, embedder=embedder)
    yield application
    application.close()


class Running:
    """A started server and stubs on a channel to it."""

    def __init__(self, server: Server) -> None:
        self.server = server
        self.target = f"127.0.0.1:{server.port}"
        self.channel = grpc.insecure_channel(self.target)
        self.store = store_pb2_grpc.MemoryStoreStub(self.channel)
        self.injection = injection_pb2_grpc.MemoryInjectionStub(self.channel)
        self.settings = settings_pb2_grpc.SettingsStub(self.channel)
        self.vault = vault_pb2_grpc.VaultStub(self.channel)

    def close(self) -> None:
        self.channel.close()
        self.server.stop(grace=1)


def start_server(config: ServerConfig, embedder: Embedder,
                 settings: ConfigStore | None = None) -> Running:
    """A real server over ``config``'s data dir on a free port (``settings``: its config
    store, e.g. ``settings_for``; None: the data dir's file or the defaults)."""
    application = App.open(replace(config, listen="127.0.0.1:0"), embedder=embedder,
                           settings=settings)
    server = create_server(application)
    server.start()
    return Running(server)


@pytest.fixture
def running(config: ServerConfig, embedder: Embedder) -> Iterator[Running]:
    live = start_server(config, embedder)
    yield live
    live.close()


def on_postgres(config: ServerConfig, dsn: str) -> ServerConfig:
    """``config`` with a config file in its data dir naming the PostgreSQL store ``dsn``."""
    Path(config.data_dir).mkdir(parents=True, exist_ok=True)
    (Path(config.data_dir) / CONFIG_FILENAME).write_text(
        f'[store]\nbackend = "postgres"\ndsn = "{dsn}"\n')
    return config


@pytest.fixture(params=["sqlite", "postgres"])
def running_on_each(request: pytest.FixtureRequest, config: ServerConfig,
                    embedder: Embedder) -> Iterator[Running]:
    """A server on a SQLite store, then on a PostgreSQL one."""
    if request.param == "postgres":
        config = on_postgres(config, request.getfixturevalue("pg_dsn"))
    live = start_server(config, embedder)
    yield live
    live.close()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Tests that fill a disk of their own run in a mount namespace of their own when this
    machine gives no mount rights (``tests/small_disk.py``)."""
    in_namespaces(items)
