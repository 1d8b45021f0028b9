"""ImportMemories from a JSON Lines file, in batches, with a progress callback."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from memsidecar.v1 import memory_pb2, store_pb2

from memsidecar_client.records import read_jsonl
from memsidecar_client.store import StoreCalls

# progress(done, total): items sent and answered so far, out of the file's total.
Progress = Callable[[int, int], None]


def merge(total: store_pb2.ImportMemoriesResponse, part: store_pb2.ImportMemoriesResponse,
          offset: int) -> None:
    """Add one batch's summary to ``total``; error indices become positions in the file."""
    total.received += part.received
    total.stored += part.stored
    total.rejected += part.rejected
    total.deduplicated += part.deduplicated
    total.ids.extend(part.ids)
    for error in part.errors:
        moved = total.errors.add()
        moved.CopyFrom(error)
        moved.index = error.index + offset


class ImportCalls(StoreCalls):
    def import_jsonl(self, path: str | Path, *, progress: Progress | None = None,
                     batch_size: int = 500,
                     timeout_s: float = 600.0) -> store_pb2.ImportMemoriesResponse:
        """Import one memory per line (``{"content": ..., "type": "decision", ...}``).

        The whole file is validated first (ValueError naming the line); then each batch of
        ``batch_size`` items is one ImportMemories call, followed by ``progress(done, total)``.
        Returns the summary of the whole file (error indices count from its first item).
        """
        return self.import_batches(read_jsonl(path), progress=progress, batch_size=batch_size,
                                   timeout_s=timeout_s)

    def import_batches(self, memories: Sequence[memory_pb2.Memory], *,
                       progress: Progress | None = None, batch_size: int = 500,
                       timeout_s: float = 600.0) -> store_pb2.ImportMemoriesResponse:
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        total = store_pb2.ImportMemoriesResponse()
        for start in range(0, len(memories), batch_size):
            batch = memories[start:start + batch_size]
            merge(total, self.import_memories(batch, timeout_s=timeout_s), start)
            if progress is not None:
                progress(start + len(batch), len(memories))
        return total
