"""What the write gate costs an import: ImportMemories with every gate on vs off.

Run: .venv/bin/python -m bench.bench_vault_import [--memories 3000] [--model minilm-int8]
Same real server, model and corpus as bench_foundation; one fresh data dir per run.
"""

from __future__ import annotations

import argparse
import os
import tempfile
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

from bench.bench_foundation import bench_import
from bench.corpus import corpus
from sidecar.api.server import create_server
from sidecar.api.server_config import ServerConfig
from sidecar.app import App
from sidecar.config import CONFIG_FILENAME, Config, ConfigStore
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
        with tempfile.TemporaryDirectory() as tmp:
            config = Config(vault=vault_config, embedding=EmbeddingConfig(args.model))
            settings = ConfigStore(Path(tmp) / CONFIG_FILENAME, config, None)
            app = App.open(ServerConfig(listen="127.0.0.1:0", data_dir=tmp), embedder=embedder,
                           settings=settings)
            server = create_server(app)
            server.start()
            try:
                result = bench_import(f"127.0.0.1:{server.port}", texts)
            finally:
                server.stop(grace=1)
        print(f"{name}: {result['memories']:.0f} memories in {result['seconds']:.1f} s = "
              f"{result['memories_per_s']:.1f} memories/s")


if __name__ == "__main__":
    from bench.results import recorded

    with recorded("vault_import"):
        main()
