"""Health, reflection and unimplemented-yet services on a real server."""

from __future__ import annotations

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

from tests.conftest import Running


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
