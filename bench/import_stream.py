"""What acknowledged batches cost an import: ImportMemories (one call, server batches of 256)
vs ImportMemoriesStream through the Python client (batches of 100 and of 20), every gate on.

Run: .venv/bin/python -m bench.import_stream [--memories 2000] [--model minilm-int8]
Same real server (``bench_foundation.serving``), model and corpus as bench_foundation; one
fresh data dir per run.
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Callable

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

from memsidecar.v1 import memory_pb2, store_pb2
from memsidecar_client import Client

from bench.bench_foundation import bench_import, serving
from bench.corpus import corpus
from sidecar.config import Config
from sidecar.embedding import Embedder
from sidecar.embedding.config import EmbeddingConfig
from sidecar.embedding.models import FP32, MODEL_NAMES, model_files

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
        with serving(embedder, Config(embedding=EmbeddingConfig(args.model))) as target:
            result = run(target, texts)
        print(f"{name}: {result['seconds']:.1f} s = {result['memories_per_s']:.1f} memories/s "
              f"(load average {os.getloadavg()[0]:.2f})")


if __name__ == "__main__":
    from bench.results import recorded

    with recorded("import_stream"):
        main()
