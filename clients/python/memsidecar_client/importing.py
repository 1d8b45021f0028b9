"""Imports over ImportMemoriesStream: acknowledged batches, resumed after a broken stream."""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import grpc
from memsidecar.v1 import memory_pb2, store_pb2

from memsidecar_client.errors import UnavailableError, from_rpc_error
from memsidecar_client.records import read_items
from memsidecar_client.retry import RetryPolicy
from memsidecar_client.store import StoreCalls

log = logging.getLogger(__name__)

# progress(done, total): items acknowledged so far, out of the total.
Progress = Callable[[int, int], None]
MAX_BATCH = 100  # the largest batch ImportMemoriesStream accepts


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


def with_ids(items: Sequence[store_pb2.ImportItem]) -> list[store_pb2.ImportItem]:
    """The items, each with an id (a new UUID where it had none), so a resent batch is
    recognised. A REGISTER item with a topic_id keeps no id: the topic names it."""
    named = []
    for item in items:
        m = item.memory
        if not m.id and not (m.tier == memory_pb2.TIER_REGISTER and m.topic_id):
            item = store_pb2.ImportItem(memory=m, restore=item.restore)
            item.memory.id = str(uuid.uuid4())
        named.append(item)
    return named


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

    def import_batches(self, memories: Sequence[memory_pb2.Memory], *,
                       progress: Progress | None = None, batch_size: int = MAX_BATCH,
                       timeout_s: float = 600.0) -> store_pb2.ImportMemoriesResponse:
        return self.import_items([store_pb2.ImportItem(memory=m) for m in memories],
                                 progress=progress, batch_size=batch_size, timeout_s=timeout_s)

    def import_items(self, items: Sequence[store_pb2.ImportItem], *,
                     progress: Progress | None = None, batch_size: int = MAX_BATCH,
                     timeout_s: float = 600.0) -> store_pb2.ImportMemoriesResponse:
        total = store_pb2.ImportMemoriesResponse()
        for ack in self.import_stream(items, batch_size=batch_size, timeout_s=timeout_s):
            offset = ack.sequence * batch_size
            merge(total, ack, min(batch_size, len(items) - offset), offset)
            if progress is not None:
                progress(total.received, len(items))
        return total

    def import_stream(self, items: Sequence[store_pb2.ImportItem], *,
                      batch_size: int = MAX_BATCH, timeout_s: float | None = 600.0,
                      retry: RetryPolicy | None = None) -> Iterator[store_pb2.ImportBatchAck]:
        """One acknowledgement per batch of ``batch_size`` items (batch ``sequence`` n holds
        items ``n * batch_size`` onwards), in order. Items without an id get one
        (``with_ids``). When a stream that acknowledged a batch breaks (UNAVAILABLE), it is
        reopened (``retry``, default the client's policy) and every batch not yet
        acknowledged is sent again; an item already stored with the same fields commits
        nothing twice. A sidecar that cannot be reached at all raises at once. ``timeout_s``: the
        deadline of each stream (None: none)."""
        if not 1 <= batch_size <= MAX_BATCH:
            raise ValueError(f"batch_size must be between 1 and {MAX_BATCH}, got {batch_size}")
        named = with_ids(items)
        batches = [store_pb2.ImportBatch(sequence=n, items=named[start:start + batch_size])
                   for n, start in enumerate(range(0, len(named), batch_size))]
        policy = retry or self.retry
        acked, failures, connected = 0, 0, False
        while acked < len(batches):
            call = self.store.ImportMemoriesStream(iter(batches[acked:]), timeout=timeout_s,
                                                   metadata=self.metadata)
            try:
                for ack in call:
                    acked, failures, connected = ack.sequence + 1, 0, True
                    yield ack
            except grpc.RpcError as err:
                error = from_rpc_error(err)
                failures += 1
                if not (connected and isinstance(error, UnavailableError)) \
                        or failures >= policy.max_attempts:
                    raise error from err
                sleep = policy.backoff(failures)
                log.info("import stream broken; resending", extra={"batch": acked,
                                                                    "sleep_s": sleep})
                time.sleep(sleep)
