"""Several sidecars on one PostgreSQL database, for the shared-store suites."""

from __future__ import annotations

from dataclasses import replace

from sidecar.api.server_config import ServerConfig
from sidecar.app import App
from sidecar.embedding import Embedder
from sidecar.retrieval.contract import SearchQuery
from sidecar.store.config import StoreConfig
from tests.conftest import settings_for


def open_app(config: ServerConfig, name: str, embedder: Embedder, dsn: str) -> App:
    mine = replace(config, data_dir=f"{config.data_dir}-{name}")
    return App.open(mine, embedder=embedder,
                    settings=settings_for(mine, store=StoreConfig(backend="postgres", dsn=dsn)))


def found(app: App, text: str, memory_id: str) -> bool:
    hits = app.retriever.search(SearchQuery(text=text, limit=3)).hits
    return memory_id in [h.memory.id for h in hits]

