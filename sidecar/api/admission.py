"""Backpressure: at most ``max_concurrent_rpcs`` calls admitted, ``max_workers`` running.

The decision is taken when a call arrives, before it is queued for a thread: a call that
would make more than ``max_concurrent_rpcs`` calls queued or in progress is answered
RESOURCE_EXHAUSTED at once instead of waiting behind seconds of work. Health checks are never
counted nor refused, and never wait for work: admitted calls can occupy at most
``max_concurrent_rpcs`` threads of a pool ``HEALTH_THREADS`` larger, so a health check (or a
refusal, which takes microseconds) always finds a free thread. An admitted call then waits for
one of ``max_workers`` slots; if its deadline passes or its caller goes away meanwhile, its
work is skipped. While it runs, ``sidecar.deadline`` tells the domain whether it is still
wanted (checked right before writes commit).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator
from concurrent import futures
from contextlib import contextmanager
from typing import Any

import grpc

from sidecar import deadline
from sidecar.api.handlers import Behavior, in_steps, is_health, wrap_handler

log = logging.getLogger(__name__)

HEALTH_THREADS = 4


class CountingExecutor(futures.ThreadPoolExecutor):
    """A thread pool that knows how many submitted jobs have not started yet."""

    def __init__(self, max_concurrent_rpcs: int) -> None:
        super().__init__(max_workers=max_concurrent_rpcs + HEALTH_THREADS,
                         thread_name_prefix="rpc")
        self._pending = 0
        self._lock = threading.Lock()

    @property
    def pending(self) -> int:
        return self._pending

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> futures.Future[Any]:
        with self._lock:
            self._pending += 1

        def started() -> Any:
            with self._lock:
                self._pending -= 1
            return fn(*args, **kwargs)

        return super().submit(started)


class AdmissionInterceptor(grpc.ServerInterceptor):
    def __init__(self, pool: CountingExecutor, max_concurrent: int, max_workers: int) -> None:
        self.pool = pool
        self.max_concurrent = max_concurrent
        self._running = 0  # admitted calls whose handler started (running or waiting a worker)
        self.working = 0  # calls holding a worker now
        self._lock = threading.Lock()
        self._workers = threading.BoundedSemaphore(max_workers)
        self.refused = 0

    @property
    def admitted(self) -> int:
        """Calls admitted and not finished: queued for a thread, running, or waiting a worker."""
        return self._running + self.pool.pending

    def intercept_service(self, continuation: Any, details: grpc.HandlerCallDetails) -> Any:
        handler = continuation(details)
        if handler is None or is_health(details.method):
            return handler
        if self.admitted >= self.max_concurrent:
            self.refused += 1
            return wrap_handler(handler, self._refuse)
        return wrap_handler(handler, self._guard)

    def _refuse(self, behavior: Behavior) -> Behavior:
        def refused(request: Any, context: grpc.ServicerContext) -> Any:
            context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED,
                          f"server busy: {self.max_concurrent} calls in progress "
                          "(server.max_concurrent_rpcs); retry with backoff")

        return refused

    def _guard(self, behavior: Behavior) -> Behavior:
        def guarded(request: Any, context: grpc.ServicerContext) -> Any:
            with self._lock:
                self._running += 1
            if not self._wait_for_worker(context):
                self._leave(worker=False)
                context.abort(grpc.StatusCode.DEADLINE_EXCEEDED,
                              "deadline passed while queued; nothing was done")
            with self._lock:
                self.working += 1
            try:
                with _deadline_of(context):
                    result = behavior(request, context)
            except BaseException:
                self._leave()
                raise
            if isinstance(result, Iterator):  # a response stream keeps its worker to the end
                return self._streaming(result, context)
            self._leave()
            return result

        return guarded

    def _streaming(self, results: Iterator[Any], context: grpc.ServicerContext) -> Iterator[Any]:
        try:
            yield from in_steps(results, lambda: _deadline_of(context))
        finally:
            self._leave()

    def _leave(self, worker: bool = True) -> None:
        with self._lock:
            if worker:
                self.working -= 1
                self._workers.release()
            self._running -= 1

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


@contextmanager
def _deadline_of(context: grpc.ServicerContext) -> Iterator[None]:
    """``sidecar.deadline`` answers for this call while the block runs."""
    bound = deadline.bind(lambda: live(context))
    try:
        yield
    finally:
        deadline.unbind(bound)


def live(context: grpc.ServicerContext) -> bool:
    """The caller still waits: not cancelled, deadline (if any) not passed. ``time_remaining``
    is 0, not negative, once the deadline has passed."""
    remaining = context.time_remaining()
    return bool(context.is_active()) and (remaining is None or remaining > 0)
