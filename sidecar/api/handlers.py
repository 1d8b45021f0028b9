"""Wrapping the behaviour of a grpc method handler, whatever its streaming shape."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from typing import Any, TypeVar

import grpc

Behavior = Callable[[Any, grpc.ServicerContext], Any]
Wrap = Callable[[Behavior], Behavior]

_KINDS = ("unary_unary", "unary_stream", "stream_unary", "stream_stream")


# grpc runs a behaviour carrying this attribute (a ThreadPoolExecutor) on that pool.
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


def is_health(method: str) -> bool:
    return method.startswith("/grpc.health.v1.Health/")


def live(context: grpc.ServicerContext) -> bool:
    """The caller still waits: not cancelled, deadline (if any) not passed. ``time_remaining``
    is 0, not negative, once the deadline has passed."""
    remaining = context.time_remaining()
    return bool(context.is_active()) and (remaining is None or remaining > 0)


T = TypeVar("T")


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
