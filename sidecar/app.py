"""The application object: config, database, embedder and services, built once and closed once."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from kernels import warm_up_all
from sidecar.config import CONFIG_FILENAME, ConfigStore, InjectionConfigSource, ServerConfig
from sidecar.embedding import Embedder, bundled_model_files
from sidecar.live import Live
from sidecar.retrieval.config import RetrievalConfig
from sidecar.retrieval.contract import Retriever
from sidecar.retrieval.hybrid import HybridRetriever
from sidecar.retrieval.vector.adaptive import AdaptiveVectorIndex, create_vector_index
from sidecar.service.memories import MemoryService
from sidecar.store.db import Database
from sidecar.vault import Vault, VaultConfig

log = logging.getLogger(__name__)


@dataclass
class App:
    config: ServerConfig
    db: Database
    embedder: Embedder
    memories: MemoryService
    retriever: Retriever
    injection_config: InjectionConfigSource
    settings: ConfigStore  # the live config file (hot reload, Settings RPCs)
    vault: Vault
    retrieval: RetrievalConfig = RetrievalConfig()  # as opened
    vectors: AdaptiveVectorIndex | None = None
    live_retrieval: Callable[[], RetrievalConfig] | None = None  # the config file's, hot

    def retrieval_now(self) -> RetrievalConfig:
        """The retrieval config in force: the file's current [retrieval], or the pinned one."""
        return self.live_retrieval() if self.live_retrieval is not None else self.retrieval

    @classmethod
    def open(
        cls, config: ServerConfig, embedder: Embedder | None = None,
        settings: ConfigStore | None = None, vault_config: VaultConfig | None = None,
        retrieval: RetrievalConfig | None = None,
    ) -> App:
        start = time.perf_counter()
        if settings is None:  # no --config: DATA_DIR/memsidecar.toml if it exists, else defaults
            settings = ConfigStore.open(Path(config.data_dir) / CONFIG_FILENAME)
        settings.pin_server(config)
        db = Database(config.db_path)
        if embedder is None:
            embedder = Embedder(bundled_model_files(), **config.embedder_options())
        memories = MemoryService(db, embedder, config.max_content_chars, config.embed_batch_size)
        # The hybrid engine keeps every index (vectors, BM25, graph, mirror) in step itself.
        # [retrieval] is hot (bar its restart-only keys, which the store keeps at their
        # running value): the engine reads the current snapshot per search; retrieval= (tests)
        # pins one instead, [retrieval.vector] included.
        live_settings = settings
        live = None if retrieval is not None else (lambda: live_settings.current.retrieval)
        retrieval = retrieval or settings.current.retrieval
        vectors = create_vector_index(config.data_dir, retrieval.vector, embedder.dim)
        retriever = HybridRetriever(embedder, Live.fixed(retrieval) if live is None else (
            settings.live().map(lambda c: c.retrieval)), vectors)
        retriever.load(memories.memories, memories.edges)  # fills and starts `vectors`
        memories.listeners.add(retriever)
        # Installs the write gate on `memories`. [vault] is hot: read from the current config
        # snapshot on every write; vault_config (tests) pins one instead.
        vault = Vault(memories, retriever.scopes,
                      vault_config or (lambda: live_settings.current.vault))
        log.info(
            "app opened",
            extra={"db": str(config.db_path), "memories": memories.memories.count(),
                   "elapsed_ms": round((time.perf_counter() - start) * 1000, 1)},
        )
        return cls(
            config=config, db=db, embedder=embedder, memories=memories, retriever=retriever,
            injection_config=settings, settings=settings, vault=vault, retrieval=retrieval,
            vectors=vectors, live_retrieval=live,
        )

    def warm_up(self) -> None:
        """Compile kernels and run the model once so the first request is not slow."""
        spent = warm_up_all()
        self.embedder.embed_one("warm up")
        self.embedder.embed_query("warm up " * 128)  # the long-query session, if any
        log.info("warm-up done", extra={"kernels_s": spent})

    def close(self) -> None:
        self.settings.close()
        stop = getattr(self.retriever, "close", None)
        if stop is not None:
            stop()  # the retrieval worker thread
        if self.vectors is not None:
            self.vectors.close()  # saves the hnsw index when it changed
        self.db.close()
