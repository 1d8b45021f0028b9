"""What the write gate costs an import: ImportMemories with every gate on vs off.

Run: .venv/bin/python -m bench.bench_vault_import [--memories 3000] [--model minilm-int8]
Same real server, model and corpus as bench_foundation; one fresh data dir per run.
"""

from __future__ import annotations

import argparse
import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

from bench.bench_foundation import bench_import, serving
from bench.corpus import corpus
from sidecar.config import Config
from sidecar.embedding import Embedder
from sidecar.embedding.config import EmbeddingConfig
from sidecar.embedding.models import FP32, MODEL_NAMES, model_files
from sidecar.vault import VaultConfig

CONFIGS = {
    "all gates on": VaultConfig(),
    "gates off": VaultConfig(noise_gate=False, length_gate=False, pii_gate=False,
                             duplicate_gate=False),
}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--memories", type=int, default=3000)
    parser.add_argument("--model", choices=MODEL_NAMES, default=FP32)
    args = parser.parse_args()
    texts = corpus(args.memories)
    embedder = Embedder(model_files(args.model))
    print(f"model {args.model}; load average {os.getloadavg()[0]:.2f}")
    for name, vault_config in CONFIGS.items():
        config = Config(vault=vault_config, embedding=EmbeddingConfig(args.model))
        with serving(embedder, config) as target:
            result = bench_import(target, texts)
        print(f"{name}: {result['memories']:.0f} memories in {result['seconds']:.1f} s = "
              f"{result['memories_per_s']:.1f} memories/s")


if __name__ == "__main__":
    from bench.results import recorded

    with recorded("vault_import"):
        main()
