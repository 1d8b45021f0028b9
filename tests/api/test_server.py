"""Health, reflection, unimplemented-yet services and the frozen start-up heap on a real
server."""

from __future__ import annotations

import gc

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

from sidecar.api.server_config import ServerConfig
from sidecar.embedding import Embedder
from tests.conftest import Running, start_server


def test_health_serving_after_start(running: Running) -> None:
    stub = health_pb2_grpc.HealthStub(running.channel)
    for service in ("", "memsidecar.v1.MemoryStore", "memsidecar.v1.MemoryInjection"):
        reply = stub.Check(health_pb2.HealthCheckRequest(service=service))
        assert reply.status == health_pb2.HealthCheckResponse.SERVING


def test_reflection_lists_services(running: Running) -> None:
    stub = reflection_pb2_grpc.ServerReflectionStub(running.channel)
    request = reflection_pb2.ServerReflectionRequest(list_services="")
    reply = next(iter(stub.ServerReflectionInfo(iter([request]))))
    names = {s.name for s in reply.list_services_response.service}
    assert {"memsidecar.v1.MemoryStore", "memsidecar.v1.MemoryInjection",
            "memsidecar.v1.Settings", "grpc.health.v1.Health"} <= names
    assert isinstance(grpc.StatusCode.OK, grpc.StatusCode)


def test_start_up_heap_is_frozen_until_close(config: ServerConfig, embedder: Embedder) -> None:
    live = start_server(config, embedder)
    try:
        mirror = live.server.app.retriever.live  # loaded at start: out of every collection
        assert gc.is_tracked(mirror) and gc.get_freeze_count() > 0
        assert id(mirror) not in {id(o) for o in gc.get_objects()}  # generations 0-2 only
    finally:
        live.close()
    assert gc.get_freeze_count() == 0
