"""Work that does not need a turn's query embedding, on a worker thread while the Inject
thread runs the model (which releases the GIL while it runs).

Only while a core is free on average: at a 1-minute load average of ``BUSY_LOAD`` per core
or more (other processes, or this sidecar's own concurrent calls), a second thread per turn
found no idle core and its hand-offs cost more than they hid (decisions/0026), so the turn
runs in order (``busy``).

The work is a list of independent tasks. A worker takes them one by one; once the model is
done, the Inject thread takes the ones no worker has started and waits only for a task in
progress. So it never waits for a worker to start (every worker busy with other turns, or
none scheduled yet on a busy machine): then it does the tasks itself, in order, as it would
without a worker.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

R = TypeVar("R")

# Worker threads for the turns of concurrent Injects.
WORKERS = 4
# Load average per core from which turns run in order (see the module docstring).
BUSY_LOAD = 1.0
# Seconds a load reading is used for.
LOAD_TTL_S = 1.0


class _Shared:
    """Tasks taken in order by whichever thread asks next."""

    def __init__(self, tasks: Sequence[Callable[[], Any]]) -> None:
        self.tasks = tasks
        self.results: list[Any] = [None] * len(tasks)
        self.errors: list[BaseException | None] = [None] * len(tasks)
        self.done = [threading.Event() for _ in tasks]
        self._next = 0
        self._lock = threading.Lock()

    def work(self) -> None:
        while True:
            with self._lock:
                i = self._next
                if i == len(self.tasks):
                    return
                self._next += 1
            try:
                self.results[i] = self.tasks[i]()
            except BaseException as error:  # raised by the Inject thread (``finish``)
                self.errors[i] = error
            finally:
                self.done[i].set()

    def finish(self) -> list[Any]:
        self.work()
        for i, event in enumerate(self.done):
            event.wait()
            error = self.errors[i]
            if error is not None:
                raise error
        return self.results


class Beside:
    """``workers`` 0: everything in order on the caller's thread. ``load``: the 1-minute
    load average; ``cores``: the CPUs it is compared with."""

    def __init__(self, workers: int = WORKERS,
                 load: Callable[[], float] = lambda: os.getloadavg()[0],
                 cores: int = os.cpu_count() or 1) -> None:
        self._pool = ThreadPoolExecutor(workers, "inject-beside") if workers > 0 else None
        self._load, self._cores = load, cores
        self._busy = (False, -LOAD_TTL_S)  # (busy, when read: monotonic s)

    def busy(self) -> bool:
        """Whether turns should run in order now: no worker, or no core free on average."""
        if self._pool is None:
            return True
        busy, read = self._busy
        now = time.monotonic()
        if now - read >= LOAD_TTL_S:
            busy = self._load() >= BUSY_LOAD * self._cores
            self._busy = (busy, now)
        return busy

    def run(self, tasks: Sequence[Callable[[], Any]],
            meanwhile: Callable[[], R]) -> tuple[list[Any], R]:
        """Each task's result (in order; the first task's exception raised here) and
        ``meanwhile()``'s, which runs on this thread while a worker takes the tasks."""
        shared = _Shared(tasks)
        if self._pool is not None:
            self._pool.submit(shared.work)
        try:
            out = meanwhile()
        finally:
            results = shared.finish()
        return results, out

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)
