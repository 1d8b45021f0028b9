"""The sidecar on the PostgreSQL backend: configured by file and environment, over gRPC."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from memsidecar.v1 import memory_pb2 as m
from memsidecar.v1 import store_pb2 as s

from sidecar.api.server_config import ServerConfig
from sidecar.app import App
from sidecar.config import CONFIG_FILENAME, ConfigStore
from sidecar.config.report import render_effective
from sidecar.embedding import Embedder
from sidecar.errors import FailedPrecondition, Unavailable
from sidecar.store.postgres.dsn import DSN_ENV, describe, scrub
from tests.conftest import start_server


def _configure(config: ServerConfig, store_table: str) -> None:
    Path(config.data_dir).mkdir(parents=True, exist_ok=True)
    (Path(config.data_dir) / CONFIG_FILENAME).write_text(f"[store]\n{store_table}\n")


def test_two_data_dirs_share_one_database(config: ServerConfig, embedder: Embedder,
                                          pg_dsn: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(DSN_ENV, pg_dsn)  # the file names the backend only
    _configure(config, 'backend = "postgres"')
    first = start_server(config, embedder)
    try:
        stored = first.store.UpsertMemory(s.UpsertMemoryRequest(memory=m.Memory(
            content="The deploy key rotates every ninety days", type=m.MEMORY_TYPE_FACT)))
    finally:
        first.close()
    other = replace(config, data_dir=config.data_dir + "-other")
    _configure(other, 'backend = "postgres"')
    second = start_server(other, embedder)  # another host: loads the shared store
    try:
        hits = second.store.Search(s.SearchRequest(query="when does the deploy key rotate?"))
        assert [h.memory.id for h in hits.hits][:1] == [stored.memory.id]
    finally:
        second.close()
    assert not (Path(other.data_dir) / "memsidecar.sqlite3").exists()


def test_missing_dsn_names_both_places(config: ServerConfig, embedder: Embedder,
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(DSN_ENV, raising=False)
    _configure(config, 'backend = "postgres"')
    with pytest.raises(FailedPrecondition, match=f"{DSN_ENV}.*dsn"):
        App.open(config, embedder=embedder)


def test_unreachable_store_is_unavailable_without_the_password(
        config: ServerConfig, embedder: Embedder, monkeypatch: pytest.MonkeyPatch) -> None:
    dsn = "postgresql://alice:s3cret-pw@127.0.0.1:1/memories?connect_timeout=1"
    monkeypatch.setenv(DSN_ENV, dsn)
    _configure(config, 'backend = "postgres"\nmax_connections = 2')
    monkeypatch.setattr("sidecar.store.postgres.db.CONNECT_TIMEOUT_S", 2.0)
    with pytest.raises(Unavailable) as caught:
        App.open(config, embedder=embedder)
    assert "s3cret-pw" not in str(caught.value)
    assert "postgresql://alice@127.0.0.1:1/memories" in str(caught.value)


def test_the_dsn_is_never_printed(tmp_path: Path) -> None:
    path = tmp_path / CONFIG_FILENAME
    path.write_text('[store]\nbackend = "postgres"\ndsn = "postgresql://u:pw@h/db"\n')
    shown = render_effective(ConfigStore.open(path).current)
    assert 'dsn = "***"' in shown and "pw" not in shown.replace("password", "")
    assert describe("postgresql://u:pw@h:6/db") == "postgresql://u@h:6/db"
    assert scrub("failed for postgresql://u:pw@h/db and pw", "postgresql://u:pw@h/db") == \
        "failed for *** and ***"
