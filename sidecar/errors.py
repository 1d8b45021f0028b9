"""Domain errors. Each maps to one gRPC status code in ``sidecar.api.status``.

``reason`` is a stable machine-readable code; ``field`` names the offending input when there is one.
"""

from __future__ import annotations


class DomainError(Exception):
    """Base class: a request the sidecar refuses, with a message a person can act on."""

    default_reason = "ERROR"

    def __init__(self, message: str, *, reason: str | None = None, field: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.reason = reason or self.default_reason
        self.field = field


class InvalidArgument(DomainError):
    default_reason = "INVALID_ARGUMENT"


class NotFound(DomainError):
    default_reason = "NOT_FOUND"


class PermissionDenied(DomainError):
    default_reason = "PERMISSION_DENIED"


class AlreadyExists(DomainError):
    default_reason = "ALREADY_EXISTS"


class FailedPrecondition(DomainError):
    default_reason = "FAILED_PRECONDITION"


class ResourceExhausted(DomainError):
    default_reason = "RESOURCE_EXHAUSTED"


class DeadlineExceeded(DomainError):
    default_reason = "DEADLINE_EXCEEDED"


class Unavailable(DomainError):
    default_reason = "UNAVAILABLE"


class StorageFault(DomainError):
    """A write the disk refused: the data dir is full or not writable. ``path`` names the file
    or directory written; reads keep being served (``sidecar.disk``)."""

    def __init__(self, message: str, *, path: str = "", reason: str | None = None,
                 field: str = "") -> None:
        super().__init__(message, reason=reason, field=field)
        self.path = path


class DiskFull(StorageFault, ResourceExhausted):
    default_reason = "DISK_FULL"  # ENOSPC, EDQUOT, SQLITE_FULL


class NotWritable(StorageFault, FailedPrecondition):
    default_reason = "NOT_WRITABLE"  # EROFS, EACCES, EPERM, SQLITE_READONLY
