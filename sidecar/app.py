"""The application object: config, database, embedder and services, built once and closed once."""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass

from kernels import warm_up_all
from sidecar.config import InjectionConfigSource, ServerConfig, StaticInjectionConfig
from sidecar.embedding import Embedder, bundled_model_files
from sidecar.retrieval.config import RetrievalConfig
from sidecar.retrieval.contract import Retriever
from sidecar.retrieval.hybrid import HybridRetriever
from sidecar.service.memories import MemoryService
from sidecar.store.db import Database

log = logging.getLogger(__name__)


@dataclass
class App:
    config: ServerConfig
    db: Database
    embedder: Embedder
    memories: MemoryService
    retriever: Retriever
    injection_config: InjectionConfigSource
    retrieval: RetrievalConfig = RetrievalConfig()

    @classmethod
    def open(
        cls, config: ServerConfig, embedder: Embedder | None = None,
        retrieval: RetrievalConfig | None = None,
    ) -> App:
        start = time.perf_counter()
        db = Database(config.db_path)
        if embedder is None:
            embedder = Embedder(bundled_model_files(), threads=config.onnx_threads)
        memories = MemoryService(db, embedder, config.max_content_chars, config.embed_batch_size)
        retrieval = retrieval or RetrievalConfig()
        retriever = HybridRetriever(embedder, retrieval)
        retriever.load(memories.memories, memories.edges)
        memories.listeners.add(retriever)
        log.info(
            "app opened",
            extra={"db": str(config.db_path), "memories": memories.memories.count(),
                   "elapsed_ms": round((time.perf_counter() - start) * 1000, 1)},
        )
        return cls(
            config=config, db=db, embedder=embedder, memories=memories, retriever=retriever,
            injection_config=StaticInjectionConfig(), retrieval=retrieval,
        )

    def warm_up(self) -> None:
        """Compile kernels and run the model once so the first request is not slow."""
        spent = warm_up_all()
        self.embedder.embed_one("warm up")
        log.info("warm-up done", extra={"kernels_s": spent})

    def close(self) -> None:
        self.db.close()
