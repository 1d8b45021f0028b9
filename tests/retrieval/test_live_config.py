"""App wiring of [retrieval.vector] from the config file: the index is built with the file's
settings, a reload retunes the hnsw search beam on the next search, and restart-only keys
(hnsw_m, exact_threshold) keep their running value."""

from __future__ import annotations

from pathlib import Path

from sidecar.api.server_config import ServerConfig
from sidecar.app import App
from sidecar.config import ConfigStore
from sidecar.embedding import Embedder
from sidecar.records import MemoryDraft, MemoryType
from sidecar.retrieval.config import RetrievalConfig
from sidecar.retrieval.contract import Mode, SearchQuery
from sidecar.retrieval.vector.config import VectorConfig
from sidecar.vault import VaultConfig
from tests.conftest import settings_for

FILE = """\
[retrieval.vector]
exact_threshold = {threshold}
hnsw_ef_search = {ef}
hnsw_m = {m}
persist = false
"""


def test_vector_settings_come_from_the_file_and_ef_search_is_hot(
        config: ServerConfig, embedder: Embedder, tmp_path: Path) -> None:
    path = tmp_path / "memsidecar.toml"
    path.write_text(FILE.format(threshold=32, ef=40, m=12))
    settings = ConfigStore.open(path, required=True)
    app = App.open(config, embedder=embedder, settings=settings)
    try:
        app.memories.import_stream([MemoryDraft(f"Note {i} about topic {i % 7}", MemoryType.FACT)
                                    for i in range(48)])
        vectors = app.vectors
        assert vectors is not None and vectors.wait_ready(60)
        assert vectors.hnsw is not None and vectors.hnsw.ef_search == 40
        assert (vectors.config.hnsw_m, vectors.config.exact_threshold) == (12, 32)

        path.write_text(FILE.format(threshold=5000, ef=300, m=24))
        assert settings.reload()
        running = settings.current.retrieval.vector
        assert (running.hnsw_ef_search, running.hnsw_m, running.exact_threshold) == (300, 12, 32)
        assert vectors.hnsw.ef_search == 40  # applied by the next search, not by the reload
        hits = app.retriever.search(SearchQuery("topic 3", limit=5, mode=Mode.VECTOR)).hits
        assert len(hits) == 5
        assert vectors.hnsw.ef_search == 300
        assert (vectors.config.hnsw_m, vectors.config.exact_threshold) == (12, 32)
        assert vectors.stats()["engine"] == "hnsw"  # exact_threshold 5000 waits for a restart
    finally:
        app.close()


def test_a_config_given_in_code_reaches_every_component(
        config: ServerConfig, embedder: Embedder) -> None:
    retrieval = RetrievalConfig(rrf_k=20, vector=VectorConfig(hnsw_ef_search=50, persist=False))
    settings = settings_for(config, retrieval=retrieval, vault=VaultConfig(max_chars=40))
    app = App.open(config, embedder=embedder, settings=settings)
    try:
        assert app.retriever.config is retrieval  # type: ignore[attr-defined]
        assert app.vectors is not None and app.vectors.config == retrieval.vector
        assert app.vault.config.max_chars == 40
    finally:
        app.close()
