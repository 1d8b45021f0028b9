"""A typed convenience client for the memsidecar gRPC API."""

from __future__ import annotations

import logging

from memsidecar_client.client import Client
from memsidecar_client.errors import (
    AlreadyExistsError,
    DeadlineExceededError,
    FailedPreconditionError,
    InternalError,
    InvalidArgumentError,
    MemsidecarError,
    NotFoundError,
    ResourceExhaustedError,
    UnavailableError,
    UnimplementedError,
)
from memsidecar_client.importing import Progress
from memsidecar_client.messages import BLOCK_PREFIX, is_block, memory_type, message
from memsidecar_client.records import (
    item_from_dict,
    memory_from_dict,
    memory_to_dict,
    read_items,
    read_jsonl,
    tier,
)
from memsidecar_client.retry import NO_RETRY, RetryPolicy

logging.getLogger(__name__).addHandler(logging.NullHandler())

__all__ = [
    "BLOCK_PREFIX",
    "NO_RETRY",
    "AlreadyExistsError",
    "Client",
    "DeadlineExceededError",
    "FailedPreconditionError",
    "InternalError",
    "InvalidArgumentError",
    "MemsidecarError",
    "NotFoundError",
    "Progress",
    "ResourceExhaustedError",
    "RetryPolicy",
    "UnavailableError",
    "UnimplementedError",
    "is_block",
    "item_from_dict",
    "memory_from_dict",
    "memory_to_dict",
    "memory_type",
    "message",
    "read_items",
    "read_jsonl",
    "tier",
]
