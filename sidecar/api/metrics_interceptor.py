"""Counts every gRPC call (method, status code, latency) and what an Inject reply reports.

Outermost interceptor: calls refused by authentication or admission are counted with their
status (UNAUTHENTICATED, RESOURCE_EXHAUSTED). An aborted call reports the code it was aborted
with; an unexpected exception counts as UNKNOWN. Health checks are not counted.
"""

from __future__ import annotations

import time
from typing import Any

import grpc
from memsidecar.v1 import injection_pb2

from sidecar.api.handlers import Behavior, is_health, wrap_handler
from sidecar.metrics.registry import STAGES, Metrics
from sidecar.vault import reasons

GATE_REASONS = frozenset({reasons.LOG_TIER, reasons.NOISE, reasons.TOO_LONG, reasons.PII,
                          reasons.CAPACITY})


class MetricsInterceptor(grpc.ServerInterceptor):
    def __init__(self, metrics: Metrics) -> None:
        self.metrics = metrics

    def intercept_service(self, continuation: Any, details: grpc.HandlerCallDetails) -> Any:
        handler = continuation(details)
        if handler is None or is_health(details.method):
            return handler
        method = details.method.rsplit("/", 1)[-1]
        return wrap_handler(handler, lambda behavior: self._timed(method, behavior))

    def _timed(self, method: str, behavior: Behavior) -> Behavior:
        def timed(request: Any, context: grpc.ServicerContext) -> Any:
            start = time.perf_counter()
            code = grpc.StatusCode.UNKNOWN
            try:
                reply = behavior(request, context)
                code = context.code() or grpc.StatusCode.OK
                if isinstance(reply, injection_pb2.InjectResponse):
                    self._inject(reply)
                return reply
            except BaseException:
                code = context.code() or grpc.StatusCode.UNKNOWN
                self._rejected(code, context)
                raise
            finally:
                self.metrics.rpc_seconds.labels(method, code.name).observe(
                    time.perf_counter() - start)

        return timed

    def _inject(self, reply: injection_pb2.InjectResponse) -> None:
        m = self.metrics
        for stage in STAGES:
            m.stage_seconds.labels(stage).observe(getattr(reply.stats.stages, f"{stage}_us") / 1e6)
        if reply.skip_reason:
            m.skips.labels(reply.skip_reason).inc()
        else:
            m.block_items.observe(len(reply.items))
            m.block_tokens.observe(reply.stats.block_tokens)

    def _rejected(self, code: grpc.StatusCode, context: grpc.ServicerContext) -> None:
        if code != grpc.StatusCode.FAILED_PRECONDITION:
            return
        reason = dict(context.trailing_metadata() or ()).get("memsidecar-reason", "")
        if reason in GATE_REASONS:
            self.metrics.rejections.labels(reason).inc()
