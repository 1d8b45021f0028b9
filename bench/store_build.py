"""Build a real memsidecar SQLite store from texts + precomputed embeddings, and serve it.

Benchmarks load cached embeddings straight into the store (the same rows the write path
stores) so a corpus is embedded once, not on every run; searches then go through the real
server over gRPC, where the query is embedded by the server.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path

import grpc
import numpy as np
from memsidecar.v1 import store_pb2_grpc

from sidecar.api.server import Server, create_server
from sidecar.api.server_config import ServerConfig
from sidecar.app import App
from sidecar.config import CONFIG_FILENAME, Config, ConfigStore
from sidecar.embedding import Embedder
from sidecar.embedding.config import EmbeddingConfig
from sidecar.embedding.models import FP32, identity
from sidecar.metrics.config import HttpConfig
from sidecar.records import DEFAULT_IMPORTANCE, Memory, MemoryType
from sidecar.retrieval.config import RetrievalConfig
from sidecar.store.db import Database
from sidecar.store.model_repo import MODEL_KEY, ModelRepo
from sidecar.store.repos import Repositories


def build_store(
    data_dir: Path, ids: Sequence[str], contents: Sequence[str], embeddings: np.ndarray,
    memory_type: MemoryType = MemoryType.FACT, model: str = FP32,
    channels: Sequence[str] = (),
) -> None:
    """Create ``data_dir`` with one memory per text, unless it already holds exactly those;
    ``embeddings`` come from embedding model ``model`` (recorded in the store); ``channels``:
    each memory's ``channel_id`` (none given: every memory's is empty)."""
    db = Database(ServerConfig(data_dir=str(data_dir)).db_path)
    try:
        repo = Repositories.open(db).memories
        if repo.count() == len(ids):
            return
        now = time.time_ns() // 1000
        channel_of = list(channels) or [""] * len(ids)
        with db.transaction():
            for memory_id, content, vector, channel in zip(ids, contents, embeddings,
                                                           channel_of, strict=True):
                repo.insert(Memory(
                    id=memory_id, content=content, type=memory_type,
                    importance=DEFAULT_IMPORTANCE[memory_type], created_at=now, updated_at=now,
                    last_accessed_at=0, access_count=0, source="bench", channel_id=channel,
                    agent_id="", forgotten=False, version=1), vector)
            ModelRepo(db).set(MODEL_KEY, identity(model).to_json())
    finally:
        db.close()


class Served:
    """The real server on a free port over ``data_dir``, with a MemoryStore stub."""

    def __init__(self, data_dir: Path, embedder: Embedder, retrieval: RetrievalConfig,
                 model: str = FP32) -> None:
        start = time.perf_counter()
        config = Config(retrieval=retrieval, embedding=EmbeddingConfig(model))
        settings = ConfigStore(data_dir / CONFIG_FILENAME, config, None)
        app = App.open(ServerConfig(listen="127.0.0.1:0", data_dir=str(data_dir),
                                    http=HttpConfig(listen="")),
                       embedder=embedder, settings=settings)
        self.server: Server = create_server(app)
        self.server.start()
        self.open_s = time.perf_counter() - start
        # Measure the steady state: the hnsw index (above its exact threshold) is built in the
        # background on a first start, loaded from DATA_DIR/vectors.hnsw afterwards.
        if app.vectors is not None and not app.vectors.wait_ready(1800) and app.vectors.building:
            raise RuntimeError("vector index not ready after 30 min")  # (exact below its threshold)
        self.ready_s = time.perf_counter() - start
        self.vectors = app.vectors
        self.app = app
        self.vector_stats = app.vectors.stats() if app.vectors is not None else {}
        self.channel = grpc.insecure_channel(f"127.0.0.1:{self.server.port}")
        self.store = store_pb2_grpc.MemoryStoreStub(self.channel)

    def close(self) -> None:
        self.channel.close()
        self.server.stop(grace=1)
