"""Waiting for the sidecar: the standard gRPC health service until it reports SERVING."""

from __future__ import annotations

import logging
import time

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from memsidecar_client.errors import (
    DeadlineExceededError,
    MemsidecarError,
    UnavailableError,
    from_rpc_error,
)
from memsidecar_client.transport import Transport

log = logging.getLogger(__name__)
SERVING = health_pb2.HealthCheckResponse.SERVING


class HealthCalls(Transport):
    def wait_ready(self, timeout_s: float = 60.0, *, service: str = "") -> None:
        """Return once the sidecar's health (``service``; "" = the whole server) is SERVING.

        While it cannot be reached (UNAVAILABLE) or reports NOT_SERVING (loading its model,
        warming up), ask again with the client's backoff (each wait reported to
        ``on_retry`` as "Health.Check"); after ``timeout_s`` raise DeadlineExceededError
        naming the last state seen. Other errors (a wrong token, ...) raise at once."""
        stub = health_pb2_grpc.HealthStub(self.channel)
        deadline = time.monotonic() + timeout_s
        request = health_pb2.HealthCheckRequest(service=service)
        attempt = 0
        while (left := deadline - time.monotonic()) > 0:
            try:
                reply = stub.Check(request, timeout=min(left, self.timeout_s),
                                   metadata=self.metadata)
                if reply.status == SERVING:
                    return
                name = health_pb2.HealthCheckResponse.ServingStatus.Name(reply.status)
                last: MemsidecarError = UnavailableError(grpc.StatusCode.UNAVAILABLE,
                                                         f"the sidecar reports {name}")
            except grpc.RpcError as err:
                last = from_rpc_error(err)
                if not isinstance(last, UnavailableError | DeadlineExceededError):
                    raise last from err
            attempt += 1
            if time.monotonic() >= deadline:
                break
            sleep = min(self.retry.backoff(attempt), max(0.0, deadline - time.monotonic()))
            log.info("waiting for the sidecar", extra={"attempt": attempt, "sleep_s": sleep})
            if self.on_retry is not None:
                self.on_retry("Health.Check", attempt, last, sleep)
            time.sleep(sleep)
        raise DeadlineExceededError(grpc.StatusCode.DEADLINE_EXCEEDED,
                                    f"{self.target} not SERVING within {timeout_s} s "
                                    f"({last.details if attempt else 'no attempt'})")
