"""Imports over ImportMemoriesStream: acknowledged batches, resumed after a broken stream."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Iterator, Sized
from pathlib import Path

import grpc
from memsidecar.v1 import memory_pb2, store_pb2

from memsidecar_client.batching import MAX_BATCH, Batches
from memsidecar_client.errors import (
    InternalError,
    MemsidecarError,
    UnavailableError,
    from_rpc_error,
)
from memsidecar_client.records import read_items
from memsidecar_client.retry import RetryPolicy
from memsidecar_client.store import StoreCalls

log = logging.getLogger(__name__)

# progress(done, total): items acknowledged so far, out of the total (0 when unknown: an
# iterator without a length).
Progress = Callable[[int, int], None]


def merge(total: store_pb2.ImportMemoriesResponse, ack: store_pb2.ImportBatchAck,
          received: int, offset: int) -> None:
    """Add one batch's acknowledgement to ``total``; error indices become positions in the
    whole import (``offset``: the batch's first item)."""
    total.received += received
    total.stored += ack.committed
    total.rejected += ack.rejected
    total.deduplicated += ack.deduplicated
    total.ids.extend(ack.ids)
    for error in ack.errors:
        moved = total.errors.add()
        moved.CopyFrom(error)
        moved.index = error.index + offset


class ImportCalls(StoreCalls):
    def import_jsonl(self, path: str | Path, *, progress: Progress | None = None,
                     batch_size: int = MAX_BATCH,
                     timeout_s: float = 600.0) -> store_pb2.ImportMemoriesResponse:
        """Import one memory per line (``{"content": ..., "type": "decision", ...}``; an
        exported line restores its memory, see ``records.item_from_dict``).

        The whole file is validated first (ValueError naming the line); then it is sent in
        acknowledged batches of ``batch_size`` (at most 100), each followed by
        ``progress(done, total)``. Returns the summary of the whole file (error indices count
        from its first item)."""
        return self.import_items(read_items(path), progress=progress, batch_size=batch_size,
                                 timeout_s=timeout_s)

    def import_batches(self, memories: Iterable[memory_pb2.Memory], *,
                       progress: Progress | None = None, batch_size: int = MAX_BATCH,
                       timeout_s: float = 600.0) -> store_pb2.ImportMemoriesResponse:
        items = (store_pb2.ImportItem(memory=m) for m in memories)
        total = len(memories) if isinstance(memories, Sized) else None
        return self.import_items(items, progress=progress, batch_size=batch_size,
                                 timeout_s=timeout_s, total=total)

    def import_items(self, items: Iterable[store_pb2.ImportItem], *,
                     progress: Progress | None = None, batch_size: int = MAX_BATCH,
                     timeout_s: float = 600.0,
                     total: int | None = None) -> store_pb2.ImportMemoriesResponse:
        """Import ``items`` (a list or any iterator, read as the batches go) and return the
        summary; ``progress(done, total)`` after each acknowledged batch (``total``: given,
        or the length of ``items``, else 0)."""
        if total is None:
            total = len(items) if isinstance(items, Sized) else 0
        summary = store_pb2.ImportMemoriesResponse()
        batches = Batches(items, batch_size)
        for ack, received in self._acknowledged(batches, timeout_s, None):
            merge(summary, ack, received, ack.sequence * batch_size)
            if progress is not None:
                progress(summary.received, total)
        return summary

    def import_stream(self, items: Iterable[store_pb2.ImportItem], *,
                      batch_size: int = MAX_BATCH, timeout_s: float | None = 600.0,
                      retry: RetryPolicy | None = None) -> Iterator[store_pb2.ImportBatchAck]:
        """One acknowledgement per batch of ``batch_size`` items (batch ``sequence`` n holds
        items ``n * batch_size`` onwards), in order; ``items`` may be an iterator, read as
        batches are sent (a few ahead of their acknowledgement). Items without an id get one
        (``batching.with_id``). When a stream that acknowledged a batch breaks (UNAVAILABLE),
        it is reopened (``retry``, default the client's policy) and every batch not yet
        acknowledged is sent again; an item already stored with the same fields commits
        nothing twice. A sidecar that cannot be reached at all raises at once; an exception
        raised by ``items`` ends the stream and is raised after the last acknowledgement.
        ``timeout_s``: the deadline of each stream (None: none)."""
        batches = Batches(items, batch_size)
        for ack, _ in self._acknowledged(batches, timeout_s, retry):
            yield ack

    def _acknowledged(self, batches: Batches, timeout_s: float | None,
                      retry: RetryPolicy | None,
                      ) -> Iterator[tuple[store_pb2.ImportBatchAck, int]]:
        """Each acknowledgement with the number of items its batch held."""
        policy = retry or self.retry
        failures, connected = 0, False
        try:
            while not batches.done:
                call = self.store.ImportMemoriesStream(batches.requests(), timeout=timeout_s,
                                                       metadata=self.metadata)
                error: MemsidecarError = InternalError(
                    grpc.StatusCode.INTERNAL, "the import stream ended before every batch "
                    "was acknowledged")  # a sidecar stopping ends it so: sent again
                try:
                    for ack in call:
                        failures, connected = 0, True
                        yield ack, batches.acknowledged(ack.sequence)
                except grpc.RpcError as err:
                    error = from_rpc_error(err)
                    if not (connected and isinstance(error, UnavailableError)):
                        raise error from err
                if batches.failure is not None:
                    raise batches.failure
                if batches.done:
                    return
                failures += 1
                if failures >= policy.max_attempts:
                    raise error
                sleep = policy.backoff(failures)
                log.info("import stream broken; resending", extra={"sleep_s": sleep})
                time.sleep(sleep)
        finally:
            batches.close()
