"""The ``[server]`` section: where the sidecar listens, where data lives, input limits, threads.

Every key is read once at start-up (``restart=True``): a reload keeps the running values.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from sidecar.auth.config import AuthConfig, TlsConfig
from sidecar.knobs import knob
from sidecar.metrics.config import HttpConfig

DEFAULT_LISTEN = "127.0.0.1:50051"
DEFAULT_DATA_DIR = "data"


@dataclass(frozen=True, slots=True)
class ServerConfig:
    listen: str = field(default=DEFAULT_LISTEN, metadata=knob(
        "HOST:PORT or unix:///path.sock; --listen overrides it.", restart=True))
    data_dir: str = field(default=DEFAULT_DATA_DIR, metadata=knob(
        "Directory of the SQLite file; --data-dir overrides it.", restart=True))
    max_message_bytes: int = field(default=16 * 1024 * 1024, metadata=knob(
        "gRPC max receive/send message size.", ge=1024, le=2**31 - 1, restart=True))
    max_content_chars: int = field(default=16_384, metadata=knob(
        "Longest memory content accepted (characters).", ge=1, restart=True))
    max_workers: int = field(default=8, metadata=knob(
        "Most calls worked on at once (from 2 at start, more while calls keep their usual "
        "time, fewer while they slow each other down).", ge=1, le=1024, restart=True))
    # 2 cores: 8 workers busy, 24 queued; beyond that a caller is better told to back off
    # than queued behind seconds of work.
    max_concurrent_rpcs: int = field(default=32, metadata=knob(
        "Calls in progress or queued at once; one more is answered RESOURCE_EXHAUSTED. "
        "Health checks are not counted and never refused.", ge=1, le=100_000, restart=True))
    # Admitted calls should answer within a few hundred ms even under a flood; the excess is
    # better told at once to back off than queued.
    queue_target_ms: float = field(default=100.0, metadata=knob(
        "A call is admitted while its expected wait for a worker (calls ahead x the average "
        "time a call takes / the worker slots, at most max_workers) is at most this; else "
        "RESOURCE_EXHAUSTED at once.",
        ge=0, le=600_000, restart=True))
    max_streams: int = field(default=16, metadata=knob(
        "Client streams (ImportMemories, ImportMemoriesStream) open at once, apart from "
        "max_concurrent_rpcs; one more is answered RESOURCE_EXHAUSTED. A stream holds a "
        "worker only while the server works on a message.", ge=1, le=10_000, restart=True))
    stream_idle_timeout_s: float = field(default=30.0, metadata=knob(
        "A client stream that sends no message for this long is closed with "
        "DEADLINE_EXCEEDED (what it committed before stays).", ge=0.001, le=86_400,
        restart=True))
    reflection: str = field(default="auto", metadata=knob(
        "gRPC server reflection: auto = on for loopback and Unix sockets, off otherwise.",
        choices=("auto", "on", "off"), restart=True))
    auth: AuthConfig = field(default_factory=AuthConfig, metadata=knob(
        "Bearer-token authentication.", restart=True))
    tls: TlsConfig = field(default_factory=TlsConfig, metadata=knob(
        "TLS and mutual TLS.", restart=True))
    http: HttpConfig = field(default_factory=HttpConfig, metadata=knob(
        "The HTTP endpoint: the admin page and Prometheus metrics.", restart=True))
    shutdown_grace_s: float = field(default=5.0, metadata=knob(
        "Seconds in-flight calls get to finish on SIGTERM/SIGINT.", ge=0, le=3600,
        restart=True))
    embed_batch_size: int = field(default=64, metadata=knob(
        "Texts per onnxruntime call when embedding imports.", ge=1, le=4096, restart=True))
    # 2-core machines: 1 keeps latency stable under load.
    onnx_threads: int = field(default=1, metadata=knob(
        "onnxruntime intra-op threads.", ge=1, le=256, restart=True))
    # A second thread holds the other core for the whole run: worth it only for the long
    # tail of queries; short ones leave that core to BM25, the agent and imports
    # (docs/decisions/0004-long-text-session.md).
    onnx_long_text_threads: int = field(default=2, metadata=knob(
        "Intra-op threads for a query (Search, Inject) of at least onnx_long_text_tokens "
        "model tokens; at most onnx_threads: no second session.", ge=1, le=256, restart=True))
    onnx_long_text_tokens: int = field(default=96, metadata=knob(
        "Model tokens (with [CLS] and [SEP]) from which a query runs on "
        "onnx_long_text_threads.", ge=1, le=100_000, restart=True))

    def embedder_options(self) -> dict[str, int]:
        """``Embedder`` keyword arguments for this config (the server's, and benchmarks')."""
        return {"threads": self.onnx_threads, "long_text_threads": self.onnx_long_text_threads,
                "long_text_tokens": self.onnx_long_text_tokens}

    @property
    def db_path(self) -> Path:
        return Path(self.data_dir) / "memsidecar.sqlite3"
