"""Backpressure: a call is admitted while its expected wait for a worker is short.

The decision is taken when a call arrives, before it is queued for a thread. The expected wait
of a new call is the number of calls ahead of it for a worker slot times the moving average of
how long a call holds one, divided by the number of slots (at most ``max_workers``, fewer when
calls slow each other down: ``sidecar.api.workers``), plus the moving average of how far
admitted calls' real waits were from that estimate (``bias_s``: the estimate lags when the
cores slow down), and zero while a slot is free; a call whose expected wait is
over ``queue_target_ms``, or that would make more than ``max_concurrent_rpcs`` calls queued or
in progress, is answered RESOURCE_EXHAUSTED at once. So the queue is as long as the server can
clear within the target whatever the calls cost: the calls it admits stay fast and the excess
learns at once that it should back off. Client streams are bounded apart
(``sidecar.api.streams``).

A refusal is answered on the thread that received the call, before anything else it brings is
read (``refusal_handler``): it takes no thread from the pool and no trip through it, so a burst
of them costs the server about a millisecond each at most and never queues in front of
admitted calls.

Health checks are never counted nor refused, and never wait for work: admitted calls and open
streams can occupy at most ``max_concurrent_rpcs + max_streams`` threads of a pool
``HEALTH_THREADS`` larger, so a health check always finds a free thread. If an admitted call's
deadline passes or its caller goes away while it waits for a worker, its work is skipped. While
it runs, ``sidecar.deadline`` tells the domain whether it is still wanted (checked right before
writes commit).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator
from concurrent import futures
from contextlib import contextmanager
from typing import Any

import grpc

from sidecar import after_reply, deadline
from sidecar.api.handlers import (
    POOL_ATTRIBUTE,
    Behavior,
    in_steps,
    is_health,
    live,
    refusal_handler,
    wrap_handler,
)
from sidecar.api.streams import StreamGate, wrap_stream
from sidecar.api.workers import SMOOTHING, Workers

log = logging.getLogger(__name__)

HEALTH_THREADS = 4


class AdmittedCalls(futures.ThreadPoolExecutor):
    """Runs admitted unary calls on the server's pool and counts them from their admission to
    their end (queued for a thread, reading their request, waiting for a worker slot,
    running), whether their behaviour ran or not: a call whose caller left before its request
    arrived ends with its job. (A ThreadPoolExecutor only because grpc honours
    ``POOL_ATTRIBUTE`` for those alone; it starts no thread of its own.)"""

    def __init__(self, pool: futures.Executor) -> None:
        super().__init__(max_workers=1)
        self.pool = pool
        self.count = 0
        self._lock = threading.Lock()

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> futures.Future[Any]:
        with self._lock:
            self.count += 1
        try:
            future = self.pool.submit(fn, *args, **kwargs)
        except BaseException:
            self._ended()
            raise
        future.add_done_callback(self._ended)
        return future

    def _ended(self, _future: object = None) -> None:
        with self._lock:
            self.count -= 1


class AdmissionInterceptor(grpc.ServerInterceptor):
    def __init__(self, pool: futures.Executor, workers: Workers, streams: StreamGate,
                 max_concurrent: int, queue_target_s: float) -> None:
        self.calls, self.workers, self.streams = AdmittedCalls(pool), workers, streams
        self.max_concurrent = max_concurrent
        self.queue_target_s = queue_target_s
        self.bias_s = 0.0  # moving average of (measured - estimated) wait of admitted calls
        self.refused = 0

    @property
    def admitted(self) -> int:
        """Unary calls admitted and not finished (client streams are counted apart)."""
        return self.calls.count

    @property
    def working(self) -> int:
        """Calls and stream messages the server works on now."""
        return self.workers.working

    def queued_work_s(self) -> float:
        """The work ahead of a call arriving now, per slot."""
        slots = self.workers.slots
        return max(0, self.admitted - slots + 1) * self.workers.hold_s / slots

    def expected_wait_s(self) -> float:
        """How long a call arriving now would wait for a worker slot: none while a slot is
        free; else the work ahead of it, corrected by how far recent calls' waits were from
        that estimate. (A free slot always admits, so the correction is measured afresh and
        a past burst cannot keep the server refusing.)"""
        work = self.queued_work_s()
        return max(0.0, work + self.bias_s) if work > 0 else 0.0

    def intercept_service(self, continuation: Any, details: grpc.HandlerCallDetails) -> Any:
        handler = continuation(details)
        if handler is None or is_health(details.method):
            return handler
        if handler.request_streaming:
            if self.streams.admit():
                return wrap_handler(handler, lambda b: wrap_stream(self.streams, bound, b))
            return self._refuse(handler, self.streams.refusal())
        if self.admitted >= self.max_concurrent:
            return self._refuse(handler, f"server busy: {self.max_concurrent} calls in "
                                "progress (server.max_concurrent_rpcs); retry with backoff")
        estimate, wait = self.queued_work_s(), self.expected_wait_s()
        if wait > self.queue_target_s:
            return self._refuse(handler, f"server busy: a call would wait about "
                                f"{wait * 1000:.0f} ms for a worker, over "
                                f"server.queue_target_ms ({self.queue_target_s * 1000:g}); "
                                "retry with backoff")
        arrived = time.perf_counter()
        return wrap_handler(handler, lambda behavior: self._guard(details.method, behavior,
                                                                  arrived, estimate))

    def _refuse(self, handler: grpc.RpcMethodHandler, message: str) -> grpc.RpcMethodHandler:
        self.refused += 1
        return refusal_handler(handler, grpc.StatusCode.RESOURCE_EXHAUSTED, message)

    def _guard(self, method: str, behavior: Behavior, arrived: float, estimate: float
               ) -> Behavior:
        def guarded(request: Any, context: grpc.ServicerContext) -> Any:
            if not self.workers.take(lambda: live(context), context.time_remaining):
                context.abort(grpc.StatusCode.DEADLINE_EXCEEDED,
                              "deadline passed while queued; nothing was done")
            start = time.perf_counter()
            self.bias_s += SMOOTHING * (start - arrived - estimate - self.bias_s)
            try:
                with bound(context, lambda: True), replied_first(context):
                    result = behavior(request, context)
            except BaseException:
                self.workers.give(time.perf_counter() - start, method)
                raise
            if isinstance(result, Iterator):  # a response stream keeps its worker to the end
                return self._streaming(result, context)
            self.workers.give(time.perf_counter() - start, method)
            return result

        setattr(guarded, POOL_ATTRIBUTE, self.calls)
        return guarded

    def _streaming(self, results: Iterator[Any], context: grpc.ServicerContext) -> Iterator[Any]:
        try:
            yield from in_steps(results, lambda: bound(context, lambda: True))
        finally:
            self.workers.give()


@contextmanager
def bound(context: grpc.ServicerContext, also: Callable[[], bool]) -> Iterator[None]:
    """``sidecar.deadline`` answers for this call while the block runs: alive while the
    caller waits and ``also()`` holds."""
    token = deadline.bind(lambda: live(context) and also())
    try:
        yield
    finally:
        deadline.unbind(token)


@contextmanager
def replied_first(context: grpc.ServicerContext) -> Iterator[None]:
    """What the block defers (``sidecar.after_reply``) runs once the call has ended: on
    grpc's polling thread, after the reply and status are sent (run on the call's own
    thread after its behaviour, it would still hold the reply back)."""
    token, jobs = after_reply.bind()
    try:
        yield
    finally:
        after_reply.unbind(token)
        if jobs and not context.add_callback(lambda: after_reply.run(jobs)):
            after_reply.run(jobs)  # the call has ended already
