"""Fixtures for injection tests: a real server with a chosen injection config, and helpers."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import replace

import pytest

from sidecar.api.server import create_server
from sidecar.app import App
from sidecar.config import ServerConfig, StaticInjectionConfig
from sidecar.config.injection import MemoryInjectionConfig
from sidecar.embedding import Embedder
from sidecar.vault.config import VaultConfig
from tests.conftest import Running

Serve = Callable[..., Running]


@pytest.fixture
def serve(config: ServerConfig, embedder: Embedder) -> Iterator[Serve]:
    """``serve(**injection_config_fields)`` starts a server on the test's data dir."""
    started: list[Running] = []

    def start(**fields: object) -> Running:
        # The vault's write-time duplicate gate would merge >= 0.95 paraphrases before they
        # are stored; these tests exercise the injection-time dedup, so it is off here.
        app = App.open(replace(config, listen="127.0.0.1:0"), embedder=embedder,
                       vault_config=VaultConfig(duplicate_gate=False))
        app.injector.config = StaticInjectionConfig(MemoryInjectionConfig(**fields))
        server = create_server(app)
        server.start()
        live = Running(server)
        started.append(live)
        return live

    yield start
    for live in started:
        if not live.server.app.db._closed:
            live.close()
