"""Typed exceptions for failed calls: the gRPC status plus the sidecar's reason/field trailers."""

from __future__ import annotations

import grpc

REASON_KEY = "memsidecar-reason"
FIELD_KEY = "memsidecar-field"


class MemsidecarError(Exception):
    """A call that failed. ``code`` is the gRPC status, ``details`` its message; ``reason``
    (e.g. "EMPTY_CONTENT") and ``field`` (e.g. "memory.content") come from the trailers."""

    code: grpc.StatusCode = grpc.StatusCode.UNKNOWN

    def __init__(self, code: grpc.StatusCode, details: str, reason: str = "", field: str = "",
                 trailers: dict[str, str] | None = None) -> None:
        super().__init__(f"{code.name}: {details}" + (f" (field {field})" if field else ""))
        self.code = code
        self.details = details
        self.reason = reason
        self.field = field
        self.trailers = trailers or {}


class InvalidArgumentError(MemsidecarError):
    pass


class NotFoundError(MemsidecarError):
    pass


class AlreadyExistsError(MemsidecarError):
    pass


class FailedPreconditionError(MemsidecarError):
    pass


class ResourceExhaustedError(MemsidecarError):
    pass


class UnavailableError(MemsidecarError):
    pass


class DeadlineExceededError(MemsidecarError):
    pass


class UnimplementedError(MemsidecarError):
    pass


class InternalError(MemsidecarError):
    pass


BY_CODE: dict[grpc.StatusCode, type[MemsidecarError]] = {
    grpc.StatusCode.INVALID_ARGUMENT: InvalidArgumentError,
    grpc.StatusCode.NOT_FOUND: NotFoundError,
    grpc.StatusCode.ALREADY_EXISTS: AlreadyExistsError,
    grpc.StatusCode.FAILED_PRECONDITION: FailedPreconditionError,
    grpc.StatusCode.RESOURCE_EXHAUSTED: ResourceExhaustedError,
    grpc.StatusCode.UNAVAILABLE: UnavailableError,
    grpc.StatusCode.DEADLINE_EXCEEDED: DeadlineExceededError,
    grpc.StatusCode.UNIMPLEMENTED: UnimplementedError,
    grpc.StatusCode.INTERNAL: InternalError,
}


def from_rpc_error(err: grpc.RpcError) -> MemsidecarError:
    """The typed exception for a failed call (MemsidecarError for codes without a class)."""
    code = err.code() if isinstance(err, grpc.Call) else grpc.StatusCode.UNKNOWN
    details = (err.details() if isinstance(err, grpc.Call) else None) or str(err)
    metadata = err.trailing_metadata() if isinstance(err, grpc.Call) else None
    trailers = {key: value for key, value in (metadata or ()) if isinstance(value, str)}
    cls = BY_CODE.get(code, MemsidecarError)
    return cls(code, details, trailers.get(REASON_KEY, ""), trailers.get(FIELD_KEY, ""), trailers)
