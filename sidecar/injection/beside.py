"""Work that does not need a turn's query embedding, on a worker thread while the Inject
thread runs the model (which releases the GIL while it runs).

The Inject thread never waits for a worker to start: when none has taken the work by the
time the model is done (every worker busy with other turns, or none scheduled yet on a busy
machine), the Inject thread does it itself, in order, as it would without a worker.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

T = TypeVar("T")
R = TypeVar("R")

# Worker threads for the turns of concurrent Injects.
WORKERS = 4


class Beside:
    """``workers`` 0: everything in order on the caller's thread."""

    def __init__(self, workers: int = WORKERS) -> None:
        self._pool = ThreadPoolExecutor(workers, "inject-beside") if workers > 0 else None

    def run(self, work: Callable[[], T], meanwhile: Callable[[], R]) -> tuple[T, R]:
        """``work()`` on a worker while this thread runs ``meanwhile()``; both results. An
        exception of either is raised here (``meanwhile``'s first)."""
        if self._pool is None:
            return work(), meanwhile()
        future = self._pool.submit(work)
        try:
            out = meanwhile()
        except BaseException:
            future.cancel()
            raise
        if future.cancel():  # no worker took it: done here
            return work(), out
        return future.result(), out

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)
