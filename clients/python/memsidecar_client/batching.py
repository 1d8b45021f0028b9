"""Import batches cut lazily from an item iterator and kept until acknowledged."""

from __future__ import annotations

import itertools
import threading
import uuid
from collections.abc import Iterable, Iterator

from memsidecar.v1 import memory_pb2, store_pb2

MAX_BATCH = 100  # the largest batch ImportMemoriesStream accepts
WINDOW = 8  # batches sent ahead of their acknowledgement


def with_id(item: store_pb2.ImportItem) -> store_pb2.ImportItem:
    """The item with an id (a new UUID where it had none), so a resent batch is recognised.
    A REGISTER item with a topic_id keeps no id: the topic names it."""
    m = item.memory
    if m.id or (m.tier == memory_pb2.TIER_REGISTER and m.topic_id):
        return item
    named = store_pb2.ImportItem(memory=m, restore=item.restore)
    named.memory.id = str(uuid.uuid4())
    return named


class Batches:
    """Batch ``n`` holds items ``n * size`` onwards. At most ``window`` batches are read
    ahead of their acknowledgement; unacknowledged ones are sent again on a new stream."""

    def __init__(self, items: Iterable[store_pb2.ImportItem], size: int,
                 window: int = WINDOW) -> None:
        if not 1 <= size <= MAX_BATCH:
            raise ValueError(f"batch_size must be between 1 and {MAX_BATCH}, got {size}")
        self.size = size
        self._source = iter(items)
        self._window = window
        self._pending: dict[int, store_pb2.ImportBatch] = {}
        self._cut = 0
        self._exhausted = False
        self.failure: Exception | None = None  # what the item iterator raised
        self._stream = 0
        self._changed = threading.Condition()

    @property
    def done(self) -> bool:
        with self._changed:
            return self._exhausted and not self._pending

    def requests(self) -> Iterator[store_pb2.ImportBatch]:
        """The requests of a new stream: the unacknowledged batches, then new ones. The
        previous stream's iterator stops."""
        with self._changed:
            self._stream += 1
            stream = self._stream
            resend = list(self._pending.values())
            self._changed.notify_all()
        yield from resend
        while (batch := self._next(stream)) is not None:
            yield batch

    def _next(self, stream: int) -> store_pb2.ImportBatch | None:
        with self._changed:
            self._changed.wait_for(lambda: len(self._pending) < self._window
                                   or stream != self._stream)
            if stream != self._stream or self._exhausted:
                return None
            try:
                items = [with_id(i) for i in itertools.islice(self._source, self.size)]
            except Exception as err:  # raised to the caller once the stream ends
                self.failure, items = err, []
            if not items:
                self._exhausted = True
                return None
            batch = store_pb2.ImportBatch(sequence=self._cut, items=items)
            self._pending[self._cut] = batch
            self._cut += 1
            return batch

    def acknowledged(self, sequence: int) -> int:
        """Forget batch ``sequence``; returns how many items it held."""
        with self._changed:
            batch = self._pending.pop(sequence, None)
            self._changed.notify_all()
        return len(batch.items) if batch is not None else 0

    def close(self) -> None:
        """Stop the current stream's iterator (it may wait for the window)."""
        with self._changed:
            self._stream += 1
            self._changed.notify_all()
