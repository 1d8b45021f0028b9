"""What acknowledged batches cost an import: ImportMemories (one call, server batches of 256)
vs ImportMemoriesStream through the Python client (batches of 100 and of 20), every gate on.

Run: .venv/bin/python -m bench.import_stream [--memories 2000] [--model minilm-int8]
Same real server, model and corpus as bench_foundation; one fresh data dir per run.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

from memsidecar.v1 import memory_pb2, store_pb2
from memsidecar_client import Client

from bench.bench_foundation import bench_import
from bench.corpus import corpus
from sidecar.api.server import create_server
from sidecar.api.server_config import ServerConfig
from sidecar.app import App
from sidecar.config import CONFIG_FILENAME, Config, ConfigStore
from sidecar.embedding import Embedder
from sidecar.embedding.config import EmbeddingConfig
from sidecar.embedding.models import FP32, MODEL_NAMES, model_files
from sidecar.metrics.config import HttpConfig

Run = Callable[[str, list[str]], dict[str, float]]


def streamed(batch_size: int) -> Run:
    def run(target: str, texts: list[str]) -> dict[str, float]:
        items = [store_pb2.ImportItem(memory=memory_pb2.Memory(
            content=text, type=memory_pb2.MEMORY_TYPE_FACT, source="bench")) for text in texts]
        start = time.perf_counter()
        with Client(target) as client:
            acks = list(client.import_stream(items, batch_size=batch_size, timeout_s=None))
        elapsed = time.perf_counter() - start
        assert sum(a.committed + a.deduplicated + a.rejected for a in acks) == len(texts)
        return {"memories": len(texts), "seconds": elapsed, "memories_per_s": len(texts) / elapsed}

    return run


RUNS: dict[str, Run] = {
    "ImportMemories": bench_import,
    "ImportMemoriesStream, batches of 100": streamed(100),
    "ImportMemoriesStream, batches of 20": streamed(20),
}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--memories", type=int, default=2000)
    parser.add_argument("--model", choices=MODEL_NAMES, default=FP32)
    args = parser.parse_args()
    texts = corpus(args.memories)
    embedder = Embedder(model_files(args.model))
    print(f"model {args.model}; {args.memories} memories; load average "
          f"{os.getloadavg()[0]:.2f}")
    for name, run in RUNS.items():
        with tempfile.TemporaryDirectory() as tmp:
            settings = ConfigStore(Path(tmp) / CONFIG_FILENAME,
                                   Config(embedding=EmbeddingConfig(args.model)), None)
            app = App.open(ServerConfig(listen="127.0.0.1:0", data_dir=tmp,
                                        http=HttpConfig(listen="")),
                           embedder=embedder, settings=settings)
            server = create_server(app)
            server.start()
            try:
                result = run(f"127.0.0.1:{server.port}", texts)
            finally:
                server.stop(grace=1)
        print(f"{name}: {result['seconds']:.1f} s = {result['memories_per_s']:.1f} memories/s "
              f"(load average {os.getloadavg()[0]:.2f})")


if __name__ == "__main__":
    from bench.results import recorded

    with recorded("import_stream"):
        main()
