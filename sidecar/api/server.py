"""Server assembly: servicers, health, reflection; create_server kept apart from serving."""

from __future__ import annotations

import logging
import os
from concurrent import futures
from pathlib import Path

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection
from memsidecar.v1 import (
    injection_pb2,
    injection_pb2_grpc,
    settings_pb2,
    settings_pb2_grpc,
    store_pb2,
    store_pb2_grpc,
    vault_pb2,
    vault_pb2_grpc,
)

from sidecar.admin.build import admin_site
from sidecar.api import grpc_log
from sidecar.api.admission import HEALTH_THREADS, AdmissionInterceptor
from sidecar.api.auth_interceptor import AuthInterceptor
from sidecar.api.exposure import check_exposure, reflection_enabled
from sidecar.api.injection_servicer import MemoryInjectionServicer
from sidecar.api.malformed import MalformedInterceptor
from sidecar.api.metrics_interceptor import MetricsInterceptor
from sidecar.api.settings_servicer import SettingsServicer
from sidecar.api.store_servicer import MemoryStoreServicer
from sidecar.api.streams import StreamGate
from sidecar.api.vault_servicer import VaultServicer
from sidecar.api.workers import Workers
from sidecar.app import App
from sidecar.auth.config import TlsConfig
from sidecar.auth.tls import read_tls
from sidecar.auth.tokens import TokenStore
from sidecar.files import FILE_MODE
from sidecar.listen import grpc_listen_error
from sidecar.metrics.http import MetricsHttp, bind_http

log = logging.getLogger(__name__)

HTTP_HEALTH = "memsidecar.http"  # SERVING while the metrics endpoint listens
SERVICE_NAMES = (
    store_pb2.DESCRIPTOR.services_by_name["MemoryStore"].full_name,
    injection_pb2.DESCRIPTOR.services_by_name["MemoryInjection"].full_name,
    settings_pb2.DESCRIPTOR.services_by_name["Settings"].full_name,
    vault_pb2.DESCRIPTOR.services_by_name["Vault"].full_name,
)
# The store takes writes: PostgreSQL's connection, SQLite's disk (NOT_SERVING while full or
# read-only; reads keep being served).
STORE_HEALTH = "memsidecar.store"


class Server:
    """A gRPC server bound to an address, with its health servicer."""

    def __init__(self, app: App, listen: str) -> None:
        self.app = app
        config = app.config
        check_exposure(config, listen)
        grpc_log.install()  # malformed requests: one log line, rate-limited
        opts = [
            ("grpc.max_receive_message_length", config.max_message_bytes),
            ("grpc.max_send_message_length", config.max_message_bytes),
            ("grpc.so_reuseport", 0),
        ]
        pool = futures.ThreadPoolExecutor(
            config.max_concurrent_rpcs + config.max_streams + HEALTH_THREADS,
            thread_name_prefix="rpc")
        workers = Workers(config.max_workers)
        streams = StreamGate(config.max_streams, config.stream_idle_timeout_s, workers)
        self.admission = AdmissionInterceptor(pool, workers, streams, config.max_concurrent_rpcs,
                                              config.queue_target_ms / 1000)
        # innermost: a request that is not valid protobuf is INVALID_ARGUMENT, not INTERNAL
        interceptors: list[grpc.ServerInterceptor] = [self.admission, MalformedInterceptor()]
        self.tokens = TokenStore(config.data_dir) if config.auth.enabled else None
        if self.tokens is not None:
            interceptors.insert(0, AuthInterceptor(self.tokens, config.auth.shared_write))
        interceptors.insert(0, MetricsInterceptor(app.metrics))  # outermost: sees refusals
        app.metrics.sources.refusals = lambda: self.admission.refused
        self.grpc = grpc.server(pool, options=opts, interceptors=interceptors)
        self.health = health.HealthServicer()
        self._register(reflection_enabled(config, listen))
        self.port = self._bind(listen, config.tls)
        self.listen = listen
        bound = listen if listen.startswith("unix") else \
            f"{listen.rpartition(':')[0]}:{self.port}"
        self.http: MetricsHttp | None = bind_http(  # a busy port refuses the start
            config.http.listen, app.metrics.registry, self.tokens,
            admin_site(app, self.tokens, bound))

    def _bind(self, listen: str, tls: TlsConfig) -> int:
        try:
            if tls.enabled:
                port = self.grpc.add_secure_port(listen, server_credentials(tls))
            else:
                port = self.grpc.add_insecure_port(listen)
        except RuntimeError as err:
            raise grpc_listen_error(listen, "address in use or invalid") from err
        if listen.startswith("unix:"):
            path = Path(listen.removeprefix("unix:").removeprefix("//"))
            if path.exists():
                os.chmod(path, FILE_MODE)  # owner-only, whatever the umask
        elif port == 0:
            raise grpc_listen_error(listen, "address in use or invalid")
        return int(port)

    def _register(self, reflect: bool) -> None:
        store_pb2_grpc.add_MemoryStoreServicer_to_server(
            MemoryStoreServicer(
                self.app.memories, self.app.retriever,
                self.app.live.map(lambda c: c.retrieval.search_limit), self.app.eraser,
            ),
            self.grpc,
        )
        injection_pb2_grpc.add_MemoryInjectionServicer_to_server(
            MemoryInjectionServicer(self.app.injector, self.app.owners), self.grpc)
        settings_pb2_grpc.add_SettingsServicer_to_server(
            SettingsServicer(self.app.settings), self.grpc
        )
        vault_pb2_grpc.add_VaultServicer_to_server(VaultServicer(self.app.vault), self.grpc)
        health_pb2_grpc.add_HealthServicer_to_server(self.health, self.grpc)
        if reflect:
            reflection.enable_server_reflection(
                (*SERVICE_NAMES, health.SERVICE_NAME, reflection.SERVICE_NAME), self.grpc
            )
        self._set_health(health_pb2.HealthCheckResponse.NOT_SERVING)
        self.health.set(HTTP_HEALTH, health_pb2.HealthCheckResponse.NOT_SERVING)

    def _set_health(self, status: int) -> None:
        for name in ("", *SERVICE_NAMES):
            self.health.set(name, status)

    def start(self) -> None:
        """Start accepting calls, warm up, then report SERVING."""
        self.grpc.start()
        if self.http is not None:  # off (""): stays NOT_SERVING
            self.http.start()
            self.health.set(HTTP_HEALTH, health_pb2.HealthCheckResponse.SERVING)
        self.app.settings.watch()
        self.app.warm_up()
        self._set_health(health_pb2.HealthCheckResponse.SERVING)
        self._watch_store()
        log.info("serving", extra={"listen": self.listen, "port": self.port})

    def _watch_store(self) -> None:
        """``memsidecar.store`` follows a shared store's connection, else whether the data
        dir takes writes (the rest keeps serving meanwhile)."""
        def report(writable: bool) -> None:
            self.health.set(STORE_HEALTH, health_pb2.HealthCheckResponse.SERVING if writable
                            else health_pb2.HealthCheckResponse.NOT_SERVING)
        feed = self.app.feed
        if feed is not None:
            feed.on_status = report
            report(feed.connected)
            return
        faults = self.app.faults
        faults.listeners.append(lambda fault: report(fault is None))
        report(faults.current is None)

    def stop(self, grace: float | None = None) -> None:
        """Stop taking calls, let in-flight calls finish within ``grace``, close the app."""
        self.health.enter_graceful_shutdown()
        grace = self.app.config.shutdown_grace_s if grace is None else grace
        try:
            self.grpc.stop(grace).wait()
        finally:
            if self.http is not None:
                self.http.close()
            self.app.close()
        log.info("stopped")


def server_credentials(tls: TlsConfig) -> grpc.ServerCredentials:
    """TLS from PEM files; with ``client_ca``, clients must present a certificate it signed."""
    files = read_tls(tls)
    return grpc.ssl_server_credentials([(files.key, files.cert)],
                                       root_certificates=files.client_ca,
                                       require_client_auth=files.client_ca is not None)


def create_server(app: App, listen: str | None = None) -> Server:
    return Server(app, listen or app.config.listen)
