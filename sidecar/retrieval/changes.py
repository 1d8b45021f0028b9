"""A count of the changes to what a search reads, for callers that reuse a search's result.

Every change to the engine's indexes (a memory put or dropped: a write, a forget, an
erasure, a scope's load or eviction; an edge; the model's vectors) runs inside
``Changes.changing``, which counts it when it starts and when it ends. ``token`` is the
count while no change is under way, None while one is: a result computed between two equal
tokens (read before and after it) was computed with nothing changing, and is what the same
search gives as long as the token stays the same.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager


class Changes:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._started = 0
        self._finished = 0

    @contextmanager
    def changing(self) -> Iterator[None]:
        """Around a change to the indexes (nested or concurrent changes count each)."""
        with self._lock:
            self._started += 1
        try:
            yield
        finally:
            with self._lock:
                self._finished += 1

    def token(self) -> int | None:
        """The changes finished so far; None while one is under way."""
        with self._lock:
            return self._finished if self._started == self._finished else None
