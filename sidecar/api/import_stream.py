"""ImportMemoriesStream: one acknowledgement per committed batch of at most ``MAX_BATCH``."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import grpc
from memsidecar.v1 import store_pb2

from sidecar.api import convert
from sidecar.api.authorize import check_memory_scope
from sidecar.api.status import abort_with, code_for
from sidecar.api.validate import check_request
from sidecar.errors import DomainError, InvalidArgument
from sidecar.memory.service import MemoryService
from sidecar.records import MemoryDraft

log = logging.getLogger(__name__)

MAX_BATCH = 100


def acknowledge(memories: MemoryService, batches: Iterator[store_pb2.ImportBatch],
                context: grpc.ServicerContext) -> Iterator[store_pb2.ImportBatchAck]:
    """Commit each batch as it arrives and acknowledge it; a refused batch ends the stream
    with its status, after every earlier batch was committed and acknowledged."""
    try:
        for batch in batches:
            yield _commit(memories, batch)
    except DomainError as err:
        abort_with(context, err)
    except grpc.RpcError:  # the client's side of the stream broke or was cancelled
        return
    except Exception:
        if context.code() is not None:  # already aborted
            raise
        log.exception("unhandled error in ImportMemoriesStream")
        context.abort(grpc.StatusCode.INTERNAL, "internal error; see the sidecar log")


def _commit(memories: MemoryService, batch: store_pb2.ImportBatch) -> store_pb2.ImportBatchAck:
    if len(batch.items) > MAX_BATCH:
        raise InvalidArgument(
            f"batch {batch.sequence} has {len(batch.items)} items; at most {MAX_BATCH} per "
            "batch: split it (nothing of it was stored)", field="items", reason="BATCH_TOO_BIG")
    summary = memories.import_batch([_item(i, item) for i, item in enumerate(batch.items)])
    return store_pb2.ImportBatchAck(
        sequence=batch.sequence, committed=summary.stored, deduplicated=summary.deduplicated,
        rejected=summary.rejected, ids=summary.ids,
        errors=[import_error(i, memory_id, err) for i, memory_id, err in summary.errors],
    )


def _item(index: int, item: store_pb2.ImportItem) -> MemoryDraft | DomainError:
    prefix = f"items[{index}]"
    try:
        check_request(item.memory, f"{prefix}.")
        check_memory_scope(item.memory.agent_id, f"{prefix}.agent_id")
        return convert.import_item_from_pb(item, prefix)
    except DomainError as err:
        return err


def import_error(index: int, memory_id: str, err: DomainError) -> store_pb2.ImportError:
    return store_pb2.ImportError(
        index=index, id=memory_id, code=code_for(err).name, message=err.message, reason=err.reason
    )
