"""Counts every gRPC call (method, status code, latency) and what an Inject reply reports.

Outermost interceptor: calls refused by authentication or admission are counted with their
status (UNAUTHENTICATED, RESOURCE_EXHAUSTED). An aborted call reports the code it was aborted
with; an unexpected exception counts as UNKNOWN. Health checks are not counted. A call is
timed from its arrival (its wait for a thread included), a response stream to its end. A write
refused by the write gate counts as a rejection, and so does each item of an import the gate
refused.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import grpc
from memsidecar.v1 import injection_pb2, store_pb2

from sidecar.api.handlers import Behavior, is_health, wrap_handler
from sidecar.metrics.registry import STAGES, Metrics
from sidecar.vault import reasons

GATE_REASONS = frozenset({reasons.LOG_TIER, reasons.NOISE, reasons.TOO_LONG, reasons.PII,
                          reasons.CAPACITY})
IMPORT_REPLIES = (store_pb2.ImportMemoriesResponse, store_pb2.ImportBatchAck)


class MetricsInterceptor(grpc.ServerInterceptor):
    def __init__(self, metrics: Metrics) -> None:
        self.metrics = metrics
        # Each series' child, looked up once (``labels`` takes a lock and builds a key).
        self._stages = tuple((f"{stage}_us", metrics.stage_seconds.labels(stage))
                             for stage in STAGES)
        self._rpc: dict[tuple[str, grpc.StatusCode], Any] = {}

    def intercept_service(self, continuation: Any, details: grpc.HandlerCallDetails) -> Any:
        handler = continuation(details)
        if handler is None or is_health(details.method):
            return handler
        method = details.method.rsplit("/", 1)[-1]
        arrived = time.perf_counter()
        return wrap_handler(handler, lambda behavior: self._timed(method, behavior, arrived))

    def _timed(self, method: str, behavior: Behavior, start: float) -> Behavior:
        def timed(request: Any, context: grpc.ServicerContext) -> Any:
            try:
                reply = behavior(request, context)
            except BaseException:
                self._failed(method, start, context)
                raise
            if isinstance(reply, Iterator):  # a response stream: timed to its end
                return self._streamed(method, start, reply, context)
            self._replied(reply)
            self._observe(method, start, context.code() or grpc.StatusCode.OK)
            return reply

        return timed

    def _streamed(self, method: str, start: float, replies: Iterator[Any],
                  context: grpc.ServicerContext) -> Iterator[Any]:
        try:
            for reply in replies:
                self._replied(reply)
                yield reply
        except GeneratorExit:  # the caller went away mid-stream
            self._observe(method, start, grpc.StatusCode.CANCELLED)
            raise
        except BaseException:
            self._failed(method, start, context)
            raise
        self._observe(method, start, context.code() or grpc.StatusCode.OK)

    def _failed(self, method: str, start: float, context: grpc.ServicerContext) -> None:
        code = context.code() or grpc.StatusCode.UNKNOWN
        self._rejected(context)
        self._observe(method, start, code)

    def _observe(self, method: str, start: float, code: grpc.StatusCode) -> None:
        spent = time.perf_counter() - start
        child = self._rpc.get((method, code))
        if child is None:
            child = self._rpc.setdefault((method, code),
                                         self.metrics.rpc_seconds.labels(method, code.name))
        child.observe(spent)

    def _replied(self, reply: Any) -> None:
        if isinstance(reply, injection_pb2.InjectResponse):
            self._inject(reply)
        elif isinstance(reply, IMPORT_REPLIES):  # items the write gate refused
            for error in reply.errors:
                if error.reason in GATE_REASONS:
                    self.metrics.rejections.labels(error.reason).inc()

    def _inject(self, reply: injection_pb2.InjectResponse) -> None:
        m = self.metrics
        stages = reply.stats.stages
        for field, child in self._stages:
            child.observe(getattr(stages, field) / 1e6)
        if reply.skip_reason:
            m.skips.labels(reply.skip_reason).inc()
        else:
            m.block_items.observe(len(reply.items))
            m.block_tokens.observe(reply.stats.block_tokens)

    def _rejected(self, context: grpc.ServicerContext) -> None:
        reason = dict(context.trailing_metadata() or ()).get("memsidecar-reason", "")
        if reason in GATE_REASONS:
            self.metrics.rejections.labels(reason).inc()
