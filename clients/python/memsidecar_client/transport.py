"""The channel, the stubs, default deadlines, error mapping and the retry rule."""

from __future__ import annotations

from collections.abc import Callable
from types import TracebackType
from typing import Any, TypeVar

import grpc
from memsidecar.v1 import injection_pb2_grpc, settings_pb2_grpc, store_pb2_grpc, vault_pb2_grpc

from memsidecar_client.errors import from_rpc_error
from memsidecar_client.retry import NO_RETRY, OnRetry, RetryPolicy, call_with_retry

T = TypeVar("T")
DEFAULT_TARGET = "127.0.0.1:50051"
DEFAULT_TIMEOUT_S = 5.0
# The sidecar's default `[server] max_message_bytes`: a reply may be as large as the request
# the sidecar took (a PruneHistory or RenderTranscript of a long history), well past grpc's
# 4 MiB default for what a client receives.
MAX_MESSAGE_BYTES = 16 * 1024 * 1024
# Reconnect quickly after the sidecar restarts, so a retry can succeed within its backoff.
CHANNEL_OPTIONS = (
    ("grpc.initial_reconnect_backoff_ms", 100),
    ("grpc.min_reconnect_backoff_ms", 100),
    ("grpc.max_reconnect_backoff_ms", 1000),
    ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
)


class Transport:
    """Owns one channel. ``timeout_s`` is the deadline of each attempt; ``retry`` applies to
    idempotent calls only; ``on_retry(rpc, attempt, error, sleep_s)`` observes retries;
    ``token`` is sent as ``authorization: Bearer <token>`` metadata with every call;
    ``tls`` (e.g. ``grpc.ssl_channel_credentials(ca_pem)``, with a client key and certificate
    for mutual TLS) makes the channel a TLS one."""

    def __init__(self, target: str = DEFAULT_TARGET, *, timeout_s: float = DEFAULT_TIMEOUT_S,
                 retry: RetryPolicy | None = None, on_retry: OnRetry | None = None,
                 channel: grpc.Channel | None = None, token: str = "",
                 tls: grpc.ChannelCredentials | None = None) -> None:
        self.target = target
        self.timeout_s = timeout_s
        self.retry = retry or RetryPolicy()
        self.on_retry = on_retry
        self.metadata = (("authorization", f"Bearer {token}"),) if token else ()
        self._owns_channel = channel is None
        if channel is None:
            channel = (grpc.secure_channel(target, tls, options=CHANNEL_OPTIONS) if tls
                       else grpc.insecure_channel(target, options=CHANNEL_OPTIONS))
        self.channel = channel
        self.store = store_pb2_grpc.MemoryStoreStub(self.channel)
        self.injection = injection_pb2_grpc.MemoryInjectionStub(self.channel)
        self.settings = settings_pb2_grpc.SettingsStub(self.channel)
        self.vault = vault_pb2_grpc.VaultStub(self.channel)

    def close(self) -> None:
        if self._owns_channel:
            self.channel.close()

    def __enter__(self: T) -> T:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    def _call(self, name: str, method: Callable[..., T], request: Any, *,
              idempotent: bool, timeout_s: float | None = None) -> T:
        """One RPC with a deadline; grpc.RpcError becomes a MemsidecarError subclass;
        UNAVAILABLE is retried with backoff when (and only when) ``idempotent``."""
        deadline = self.timeout_s if timeout_s is None else timeout_s

        def attempt() -> T:
            try:
                return method(request, timeout=deadline, metadata=self.metadata)
            except grpc.RpcError as err:
                raise from_rpc_error(err) from err

        policy = self.retry if idempotent else NO_RETRY
        return call_with_retry(name, attempt, policy, self.on_retry)
