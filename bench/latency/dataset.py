"""The 10,000-memory store the latency suite runs against, built once and cached.

The SQLite file is built through the Python client (ImportMemories into a real sidecar) under
``bench/.cache/latency-<n>-v<VERSION>/`` and copied to a temporary directory for each run, so
reruns skip the ~minutes of embedding and the cache is never modified by a run.
"""

from __future__ import annotations

import random
import shutil
from dataclasses import replace
from pathlib import Path

from memsidecar.v1 import memory_pb2
from memsidecar_client import Client

from bench.corpus import memory_text
from sidecar.api.server import create_server
from sidecar.api.server_config import ServerConfig
from sidecar.app import App
from sidecar.embedding import Embedder
from sidecar.metrics.config import HttpConfig

VERSION = 1  # bump when the generated text or metadata change
CACHE = Path(__file__).resolve().parents[1] / ".cache"
DB_FILE = "memsidecar.sqlite3"
TYPES = [memory_pb2.MemoryType.Value(name) for name in memory_pb2.MemoryType.keys()[1:]]
AGENTS = ["", "", "agent-a", "agent-b"]  # half shared, half owned by one of two agents


def memories(n: int, seed: int = 11) -> list[memory_pb2.Memory]:
    """Varied memories: the foundation corpus' sentences, every type, shared and per agent."""
    rng = random.Random(seed)
    return [memory_pb2.Memory(content=memory_text(rng), type=rng.choice(TYPES),
                              agent_id=rng.choice(AGENTS), source="bench:latency")
            for _ in range(n)]


def cached_store(n: int, embedder: Embedder) -> Path:
    """Directory holding a complete store of ``n`` memories (built on the first call)."""
    folder = CACHE / f"latency-{n}-v{VERSION}"
    if (folder / "COMPLETE").exists():
        return folder
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    app = App.open(ServerConfig(listen="127.0.0.1:0", data_dir=str(folder),
                                http=HttpConfig(listen="")), embedder=embedder)
    server = create_server(app)
    server.start()
    try:
        with Client(f"127.0.0.1:{server.port}") as client:
            summary = client.import_memories(memories(n), timeout_s=3600)
    finally:
        server.stop(grace=1)
    if summary.stored < 0.95 * n:
        raise RuntimeError(f"only {summary.stored} of {n} memories stored: {summary.errors[:3]}")
    (folder / "COMPLETE").write_text(f"{summary.stored} stored\n")
    return folder


def working_copy(cached: Path, target: Path) -> ServerConfig:
    """Copy the cached store to ``target`` and return a config serving it."""
    shutil.copytree(cached, target, ignore=shutil.ignore_patterns("COMPLETE"))
    return replace(ServerConfig(), listen="127.0.0.1:0", data_dir=str(target),
                   http=HttpConfig(listen=""))
