"""Fixtures for capture tests: a real server with a chosen injection config."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from sidecar.api.server_config import ServerConfig
from sidecar.embedding import Embedder
from sidecar.injection.config import MemoryInjectionConfig
from sidecar.retrieval.config import RetrievalConfig
from sidecar.vault.config import VaultConfig
from tests.conftest import Running, settings_for, start_server

Serve = Callable[..., Running]


@pytest.fixture
def serve(config: ServerConfig, embedder: Embedder) -> Iterator[Serve]:
    """``serve(vault=VaultConfig(...), retrieval=RetrievalConfig(...),
    **injection_config_fields)`` starts a server on the test's data dir."""
    started: list[Running] = []

    def start(vault: VaultConfig | None = None, retrieval: RetrievalConfig | None = None,
              **fields: object) -> Running:
        settings = settings_for(config, vault=vault or VaultConfig(),
                                retrieval=retrieval or RetrievalConfig(),
                                defaults=MemoryInjectionConfig(**fields))  # type: ignore[arg-type]
        live = start_server(config, embedder, settings)
        started.append(live)
        return live

    yield start
    for live in started:
        live.close()
