"""Fixtures for injection tests: a real server with a chosen injection config, and helpers."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from sidecar.api.server_config import ServerConfig
from sidecar.embedding import Embedder
from sidecar.injection.config import MemoryInjectionConfig
from sidecar.vault.config import VaultConfig
from tests.conftest import Running, settings_for, start_server

Serve = Callable[..., Running]


@pytest.fixture
def serve(config: ServerConfig, embedder: Embedder) -> Iterator[Serve]:
    """``serve(**injection_config_fields)`` starts a server on the test's data dir (with the
    session's embedder, or ``with_embedder``)."""
    started: list[Running] = []

    def start(with_embedder: Embedder | None = None, **fields: object) -> Running:
        # The vault's write-time duplicate gate would merge >= 0.95 paraphrases before they
        # are stored; these tests exercise the injection-time dedup, so it is off here.
        settings = settings_for(config, vault=VaultConfig(duplicate_gate=False),
                                defaults=MemoryInjectionConfig(**fields))  # type: ignore[arg-type]
        live = start_server(config, with_embedder or embedder, settings)
        started.append(live)
        return live

    yield start
    for live in started:
        if not live.server.app.db._closed:
            live.close()
