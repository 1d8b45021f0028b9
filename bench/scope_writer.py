"""One writer of ``bench.scope_writes``: a sidecar (``App``, change feed and write gates on)
on a PostgreSQL store that imports one user's memories when told to.

Run by path (``python bench/scope_writer.py DSN DATA_DIR AGENT USER COUNT BATCH SEED
RESIDENCY``) with
the tree to measure first on PYTHONPATH and PYTHONSAFEPATH=1, so a baseline tree's sidecar is
the one imported. Prints ``ready``, waits for a line on stdin, imports COUNT memories in
acknowledged batches of BATCH (``import_batch``: one transaction each, as
``ImportMemoriesStream``), prints one JSON line and exits. The vectors are random unit
vectors handed to the import in place of the model's (the model's time is not what a write
lock governs; ``--grpc`` of the bench measures with the model).
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import numpy as np

import sidecar
from sidecar.api.server_config import ServerConfig
from sidecar.app import App
from sidecar.config import CONFIG_FILENAME, Config, ConfigStore
from sidecar.metrics.config import HttpConfig
from sidecar.records import MemoryDraft, MemoryType
from sidecar.retrieval.config import RetrievalConfig
from sidecar.store.config import StoreConfig

WORDS = ("deploy billing search cluster mobile release token cache queue database backup "
         "invoice customer latency alert runbook schema migration budget roadmap incident "
         "review config secret storage network gateway metrics dashboard pipeline worker").split()


class GivenVectors:
    """Stands in for the embedder of the import path: a random unit vector per text."""

    def __init__(self, dim: int, seed: int) -> None:
        self.dim = dim
        self.generation = 0
        self._rng = np.random.default_rng(seed)

    def embed(self, texts: list[str], batch_size: int = 64) -> np.ndarray:
        vectors: np.ndarray = self._rng.standard_normal((len(texts), self.dim)).astype(
            np.float32)
        unit: np.ndarray = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
        return unit

    def embed_one(self, text: str) -> np.ndarray:
        row: np.ndarray = self.embed([text])[0]
        return row


def drafts(agent: str, user: str, count: int, seed: int) -> list[MemoryDraft]:
    rng = np.random.default_rng(seed)
    texts = [" ".join(rng.choice(WORDS, size=int(rng.integers(8, 16)))) + f" ({user} {n})"
             for n in range(count)]
    return [MemoryDraft(t.capitalize(), MemoryType.FACT, agent_id=agent, user_id=user)
            for t in texts]


def main(argv: list[str]) -> None:
    dsn, data_dir, agent, user = argv[:4]
    count, batch, seed = (int(a) for a in argv[4:7])
    residency = argv[7]
    config = ServerConfig(listen="127.0.0.1:0", data_dir=data_dir, http=HttpConfig(listen=""))
    Path(data_dir).mkdir(parents=True, exist_ok=True)
    settings = ConfigStore(Path(data_dir) / CONFIG_FILENAME,
                           Config(store=StoreConfig(backend="postgres", dsn=dsn),
                                  retrieval=RetrievalConfig(residency=residency)), None)
    app = App.open(config, settings=settings)
    app.memories.embedder = GivenVectors(app.embedder.dim, seed)  # type: ignore[assignment]
    items = drafts(agent, user, count, seed)
    print("ready", flush=True)
    sys.stdin.readline()
    start, cpu = time.perf_counter(), time.process_time()
    stored = 0
    for at in range(0, count, batch):
        stored += app.memories.import_batch(list(items[at : at + batch])).stored
    elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu
    print(json.dumps({"stored": stored, "elapsed_s": elapsed, "cpu_s": cpu, "user": user,
                      "sidecar": str(Path(sidecar.__file__).parent.parent)}), flush=True)
    app.close()


if __name__ == "__main__":
    main(sys.argv[1:])
