"""Fixtures of the shared-store suites."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from sidecar.api.server_config import ServerConfig
from sidecar.app import App
from sidecar.embedding import Embedder
from tests.pg.sidecars import open_app


@pytest.fixture
def pair(config: ServerConfig, embedder: Embedder, pg_dsn: str) -> Iterator[tuple[App, App]]:
    """Two sidecars ("a" and "b", each its own data dir) on one PostgreSQL database."""
    a, b = open_app(config, "a", embedder, pg_dsn), open_app(config, "b", embedder, pg_dsn)
    yield a, b
    b.close()
    a.close()
