"""Wrapping the behaviour of a grpc method handler, whatever its streaming shape."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import grpc

Behavior = Callable[[Any, grpc.ServicerContext], Any]
Wrap = Callable[[Behavior], Behavior]

_KINDS = ("unary_unary", "unary_stream", "stream_unary", "stream_stream")


def wrap_handler(handler: grpc.RpcMethodHandler, wrap: Wrap) -> grpc.RpcMethodHandler:
    """The same handler with its one behaviour replaced by ``wrap(behaviour)``."""
    for kind in _KINDS:
        behavior = getattr(handler, kind)
        if behavior is not None:
            return handler._replace(**{kind: wrap(behavior)})
    return handler


def is_health(method: str) -> bool:
    return method.startswith("/grpc.health.v1.Health/")
