"""The [server] section: where the sidecar listens, where data lives, input limits."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

DEFAULT_LISTEN = "127.0.0.1:50051"
DEFAULT_DATA_DIR = "data"


@dataclass(frozen=True, slots=True)
class ServerConfig:
    listen: str = DEFAULT_LISTEN
    data_dir: str = DEFAULT_DATA_DIR
    # gRPC max receive/send message size.
    max_message_bytes: int = 16 * 1024 * 1024
    # Longest memory content accepted (characters).
    max_content_chars: int = 16_384
    # Worker threads serving RPCs.
    max_workers: int = 8
    # Seconds in-flight calls get to finish on SIGTERM/SIGINT.
    shutdown_grace_s: float = 5.0
    # Texts per onnxruntime call when embedding imports.
    embed_batch_size: int = 64
    # onnxruntime intra-op threads (2-core machines: 1 keeps latency stable under load).
    onnx_threads: int = 1
    # A query (Search, Inject) of at least onnx_long_text_tokens model tokens runs on a second
    # session with onnx_long_text_threads (at most onnx_threads: no second session). A second
    # thread saves ~35% at any length (bench/embed_threads.py, 2 cores) but holds the other
    # core for the whole run; from 96 tokens (one query in ten, the slow tail) the 6-9 ms
    # saved are worth it, while nine queries in ten leave that core to BM25, the agent and
    # imports.
    onnx_long_text_threads: int = 2
    onnx_long_text_tokens: int = 96

    def embedder_options(self) -> dict[str, int]:
        """``Embedder`` keyword arguments for this config (the server's, and benchmarks')."""
        return {"threads": self.onnx_threads, "long_text_threads": self.onnx_long_text_threads,
                "long_text_tokens": self.onnx_long_text_tokens}

    @property
    def db_path(self) -> Path:
        return Path(self.data_dir) / "memsidecar.sqlite3"
