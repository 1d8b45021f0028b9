"""Wrapping the behaviour of a grpc method handler, whatever its streaming shape."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from concurrent import futures
from contextlib import AbstractContextManager
from typing import Any, TypeVar

import grpc

Behavior = Callable[[Any, grpc.ServicerContext], Any]
Wrap = Callable[[Behavior], Behavior]

_KINDS = ("unary_unary", "unary_stream", "stream_unary", "stream_stream")
T = TypeVar("T")


# grpc runs a behaviour carrying this attribute (a ThreadPoolExecutor; any other executor is
# ignored) on that pool.
POOL_ATTRIBUTE = "experimental_thread_pool"


def wrap_handler(handler: grpc.RpcMethodHandler, wrap: Wrap) -> grpc.RpcMethodHandler:
    """The same handler with its one behaviour replaced by ``wrap(behaviour)``, on the
    thread pool the behaviour asked for, if any."""
    for kind in _KINDS:
        behavior = getattr(handler, kind)
        if behavior is not None:
            wrapped = wrap(behavior)
            pool = getattr(behavior, POOL_ATTRIBUTE, None)
            if pool is not None:
                setattr(wrapped, POOL_ATTRIBUTE, pool)
            return handler._replace(**{kind: wrapped})
    return handler


class InlineExecutor(futures.ThreadPoolExecutor):
    """Runs what it is given at once, on the thread that gives it (a ThreadPoolExecutor only
    because grpc honours ``POOL_ATTRIBUTE`` for those alone; it never starts a thread)."""

    def submit(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> futures.Future[T]:
        future: futures.Future[T] = futures.Future()
        try:
            future.set_result(fn(*args, **kwargs))
        except BaseException as err:  # the future carries it, as a pool's would
            future.set_exception(err)
        return future


_INLINE = InlineExecutor()


def refusal_handler(handler: grpc.RpcMethodHandler, code: grpc.StatusCode, message: str
                    ) -> grpc.RpcMethodHandler:
    """A handler for ``handler``'s method that answers ``code`` and ``message`` at once.

    It runs on the thread that received the call (grpc's polling thread), not on a pool, and
    takes the request as a stream it never reads: answering needs no thread switch and no
    message. The wire is the same for a unary request: the client sees only the status."""

    def refuse(requests: Any, context: grpc.ServicerContext) -> Any:
        context.abort(code, message)

    setattr(refuse, POOL_ATTRIBUTE, _INLINE)
    kind = "stream_stream" if handler.response_streaming else "stream_unary"
    behaviors: dict[str, Any] = {k: None for k in _KINDS}
    return handler._replace(request_streaming=True, **(behaviors | {kind: refuse}))


def is_health(method: str) -> bool:
    return method.startswith("/grpc.health.v1.Health/")


def live(context: grpc.ServicerContext) -> bool:
    """The caller still waits: not cancelled, deadline (if any) not passed. ``time_remaining``
    is 0, not negative, once the deadline has passed."""
    remaining = context.time_remaining()
    return bool(context.is_active()) and (remaining is None or remaining > 0)


def in_steps(results: Iterator[T], scope: Callable[[], AbstractContextManager[Any]]
             ) -> Iterator[T]:
    """A response stream whose every step (the servicer's code up to its next reply) runs
    inside a fresh ``scope()``: context variables bound for a call hold while its stream runs
    and never leak into another call served by the same thread between steps."""
    while True:
        with scope():
            try:
                item = next(results)
            except StopIteration:
                return
        yield item
