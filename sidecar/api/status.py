"""The one place domain errors become gRPC status codes."""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from typing import Any, TypeVar

import grpc
from google.protobuf.message import Message

from sidecar import errors
from sidecar.api.validate import check_request

log = logging.getLogger(__name__)

CODES: dict[type[errors.DomainError], grpc.StatusCode] = {
    errors.InvalidArgument: grpc.StatusCode.INVALID_ARGUMENT,
    errors.NotFound: grpc.StatusCode.NOT_FOUND,
    errors.PermissionDenied: grpc.StatusCode.PERMISSION_DENIED,
    errors.AlreadyExists: grpc.StatusCode.ALREADY_EXISTS,
    errors.FailedPrecondition: grpc.StatusCode.FAILED_PRECONDITION,
    errors.ResourceExhausted: grpc.StatusCode.RESOURCE_EXHAUSTED,
    errors.Unavailable: grpc.StatusCode.UNAVAILABLE,
    errors.DeadlineExceeded: grpc.StatusCode.DEADLINE_EXCEEDED,
    # The disk refused a write: full (wait for space) or not writable (an operator must act).
    errors.DiskFull: grpc.StatusCode.RESOURCE_EXHAUSTED,
    errors.NotWritable: grpc.StatusCode.FAILED_PRECONDITION,
}

F = TypeVar("F", bound=Callable[..., Any])


def code_for(err: errors.DomainError) -> grpc.StatusCode:
    for cls in type(err).__mro__:
        if cls in CODES:
            return CODES[cls]
    return grpc.StatusCode.UNKNOWN


def abort_with(context: grpc.ServicerContext, err: errors.DomainError) -> None:
    context.set_trailing_metadata((("memsidecar-reason", err.reason),
                                   ("memsidecar-field", err.field)))
    context.abort(code_for(err), err.message)


def grpc_errors(method: F) -> F:
    """Servicer-method decorator: a unary request's fields are checked first
    (``sidecar.api.validate``); DomainError -> its status; anything else -> INTERNAL, logged."""

    @functools.wraps(method)
    def wrapper(self: Any, request: Any, context: grpc.ServicerContext) -> Any:
        try:
            if isinstance(request, Message):
                check_request(request)
            return method(self, request, context)
        except errors.DomainError as err:
            abort_with(context, err)
        except Exception:
            if context.code() is not None:  # already aborted via context.abort
                raise
            log.exception("unhandled error in %s", method.__qualname__)
            context.abort(grpc.StatusCode.INTERNAL, "internal error; see the sidecar log")

    return wrapper  # type: ignore[return-value]
