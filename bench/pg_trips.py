"""Round trips to PostgreSQL on the calling thread, counted from psycopg's waits."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from psycopg import waiting


@contextmanager
def round_trips() -> Iterator[Callable[[], int]]:
    """While open, counts the waits of psycopg's connections on this thread in which the
    client read the server's answer (one per request answered); yields the count so far."""
    answered = [0]
    caller = threading.get_ident()
    original = waiting.wait

    def reading(gen: Any) -> Any:  # the generator, noting whether an answer was read
        read = False
        try:
            wanted = next(gen)
            while True:
                ready = yield wanted
                read = read or bool(ready & waiting.Ready.R)
                wanted = gen.send(ready)
        except StopIteration as stop:
            return stop.value
        finally:
            if read and threading.get_ident() == caller:
                answered[0] += 1

    def counting(gen: Any, fileno: int, interval: float = 0.0,
                 timeout: float | None = None) -> Any:
        return original(reading(gen), fileno, interval=interval, timeout=timeout)

    waiting.wait = counting
    try:
        yield lambda: answered[0]
    finally:
        waiting.wait = original
