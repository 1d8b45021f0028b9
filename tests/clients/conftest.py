"""A sidecar listening on a Unix socket, for the clients' unix: addresses."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from sidecar.api.server import create_server
from sidecar.app import App
from sidecar.config import ServerConfig
from sidecar.embedding import Embedder


@pytest.fixture
def unix_target(config: ServerConfig, embedder: Embedder) -> Iterator[str]:
    """``unix:///…/sidecar.sock`` of a running sidecar (a short path: sockets have a limit)."""
    with tempfile.TemporaryDirectory(prefix="ms-") as folder:
        listen = f"unix://{Path(folder) / 'sidecar.sock'}"
        server = create_server(App.open(replace(config, listen=listen), embedder=embedder))
        server.start()
        yield listen
        server.stop(grace=1)
