"""Time in whole microseconds: per-stage timings (monotonic) and stored timestamps (epoch)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import ParamSpec, TypeVar

P = ParamSpec("P")
R = TypeVar("R")


def now_ns() -> int:
    return time.perf_counter_ns()


def now_us() -> int:
    """The wall-clock time (Unix epoch) in microseconds, as timestamps are stored."""
    return time.time_ns() // 1000


def us_since(start_ns: int) -> int:
    """Microseconds elapsed since ``start_ns`` (a ``now_ns()`` reading)."""
    return (time.perf_counter_ns() - start_ns) // 1000


def timed(func: Callable[P, R], *args: P.args, **kwargs: P.kwargs) -> tuple[R, int]:
    """``func(*args, **kwargs)`` and the microseconds it took (e.g. on a pool thread)."""
    start = now_ns()
    out = func(*args, **kwargs)
    return out, us_since(start)


class Clock:
    """Named stage timings: ``lap(name)`` records the time since the previous lap."""

    def __init__(self, now: Callable[[], int] = time.perf_counter_ns) -> None:
        """``now``: the nanosecond counter (e.g. ``time.thread_time_ns`` for CPU time)."""
        self._now = now
        self.start = self.last = now()
        self.timings: dict[str, int] = {}

    def since_lap(self) -> int:
        return (self._now() - self.last) // 1000

    def lap(self, name: str) -> None:
        now = self._now()
        self.timings[name] = (now - self.last) // 1000
        self.last = now

    def record(self, name: str, us: int) -> None:
        self.timings[name] = us

    def done(self, name: str = "total") -> dict[str, int]:
        """The timings, plus ``name`` = the time since the clock started."""
        self.timings[name] = (self._now() - self.start) // 1000
        return self.timings
