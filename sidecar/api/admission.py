"""Backpressure: at most ``max_concurrent_rpcs`` calls admitted, ``max_workers`` running.

A call over the bound is answered RESOURCE_EXHAUSTED at once instead of queueing behind
seconds of work. Health checks are never counted nor refused and never wait for a worker: the
server's thread pool has ``HEALTH_THREADS`` more threads than calls can be admitted, so a
health check (or a refusal) always finds a free thread. An admitted call waits for a worker
slot; if its deadline passes or its caller goes away meanwhile, its work is skipped.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

import grpc

from sidecar import deadline
from sidecar.api.handlers import Behavior, is_health, wrap_handler

log = logging.getLogger(__name__)

HEALTH_THREADS = 4


def pool_size(max_concurrent_rpcs: int) -> int:
    return max_concurrent_rpcs + HEALTH_THREADS


class AdmissionInterceptor(grpc.ServerInterceptor):
    def __init__(self, max_concurrent: int, max_workers: int) -> None:
        self.max_concurrent = max_concurrent
        self._admitted = 0
        self._lock = threading.Lock()
        self._workers = threading.BoundedSemaphore(max_workers)
        self.refused = 0

    def intercept_service(self, continuation: Any, details: grpc.HandlerCallDetails) -> Any:
        handler = continuation(details)
        if handler is None or is_health(details.method):
            return handler
        return wrap_handler(handler, self._guard)

    @property
    def admitted(self) -> int:
        """Calls admitted and not finished (running or waiting for a worker)."""
        return self._admitted

    def _admit(self) -> bool:
        with self._lock:
            if self._admitted >= self.max_concurrent:
                self.refused += 1
                return False
            self._admitted += 1
            return True

    def _leave(self) -> None:
        with self._lock:
            self._admitted -= 1

    def _guard(self, behavior: Behavior) -> Behavior:
        def guarded(request: Any, context: grpc.ServicerContext) -> Any:
            if not self._admit():
                context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED,
                              f"server busy: {self.max_concurrent} calls in progress "
                              "(server.max_concurrent_rpcs); retry with backoff")
            try:
                if not self._wait_for_worker(context):
                    context.abort(grpc.StatusCode.DEADLINE_EXCEEDED,
                                  "deadline passed while queued; nothing was done")
                bound = deadline.bind(lambda: live(context))
                try:
                    return behavior(request, context)
                finally:
                    deadline.unbind(bound)
                    self._workers.release()
            finally:
                self._leave()

        return guarded

    def _wait_for_worker(self, context: grpc.ServicerContext) -> bool:
        """Take a worker slot unless the call expires or is cancelled first."""
        while live(context):
            remaining = context.time_remaining()
            step = 0.05 if remaining is None else min(0.05, remaining)
            if self._workers.acquire(timeout=step):
                if live(context):
                    return True
                self._workers.release()
                return False
        return False


def live(context: grpc.ServicerContext) -> bool:
    """The caller still waits: not cancelled, deadline (if any) not passed. ``time_remaining``
    is 0, not negative, once the deadline has passed."""
    remaining = context.time_remaining()
    return bool(context.is_active()) and (remaining is None or remaining > 0)
