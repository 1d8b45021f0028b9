"""Requests that are not valid protobuf get INVALID_ARGUMENT with a message a caller can act on.

grpc answers a request it cannot parse (truncated bytes, a wrong wire type, a string field
holding bytes that are not UTF-8) with INTERNAL "Exception deserializing request!", which
reads as a fault of the server. Here each method parses its requests itself: a request that
fails becomes a ``Malformed`` in place of the message, and the behaviour answers it with
INVALID_ARGUMENT (reason ``MALFORMED_REQUEST``) before any other work; a client stream is
ended at its first such message (what it committed before stays). Each is counted in the
rate-limited log line of ``sidecar.api.grpc_log``; the bytes are never logged.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import grpc

from sidecar.api.grpc_log import MALFORMED
from sidecar.api.handlers import Behavior, wrap_handler

REASON = "MALFORMED_REQUEST"


@dataclass(frozen=True)
class Malformed:
    """A request message that could not be parsed: what failed, never the bytes."""

    error: str


def message(method: str, bad: Malformed) -> str:
    return (f"the {method} request is not valid protobuf ({bad.error}): a string field holds "
            "bytes that are not UTF-8, or the bytes are not this method's request message; "
            "send strings as UTF-8 text and encode requests with the generated stubs")


def tolerant(parse: Callable[[bytes], Any]) -> Callable[[bytes], Any]:
    def read(data: bytes) -> Any:
        try:
            return parse(data)
        except Exception as failed:  # DecodeError; also grpc's own catch-all at this point
            MALFORMED.note(failed)
            return Malformed(type(failed).__name__)

    return read


def refuse(context: grpc.ServicerContext, method: str, bad: Malformed) -> None:
    context.set_trailing_metadata((("memsidecar-reason", REASON), ("memsidecar-field", "")))
    context.abort(grpc.StatusCode.INVALID_ARGUMENT, message(method, bad))


def _checked(behavior: Behavior, method: str, streaming: bool) -> Behavior:
    def unary(request: Any, context: grpc.ServicerContext) -> Any:
        if isinstance(request, Malformed):
            refuse(context, method, request)
        return behavior(request, context)

    def stream(requests: Iterator[Any], context: grpc.ServicerContext) -> Any:
        def parsed() -> Iterator[Any]:
            for request in requests:
                if isinstance(request, Malformed):
                    refuse(context, method, request)
                yield request

        return behavior(parsed(), context)

    return stream if streaming else unary


class MalformedInterceptor(grpc.ServerInterceptor):
    """Innermost interceptor: the handler parses with ``tolerant`` and its behaviour refuses a
    ``Malformed`` request (authentication and admission have run by then)."""

    def intercept_service(self, continuation: Any, details: grpc.HandlerCallDetails) -> Any:
        handler = continuation(details)
        if handler is None or handler.request_deserializer is None:
            return handler
        method = details.method.rsplit("/", 1)[-1]
        checked = wrap_handler(handler, lambda behavior: _checked(
            behavior, method, handler.request_streaming))
        return checked._replace(request_deserializer=tolerant(handler.request_deserializer))
