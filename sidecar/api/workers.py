"""Worker slots: how many calls the server works for at once, adapted to measured latency.

A unary call holds a slot from its start to its end; a client stream holds one only while the
server works on a message it received, never while it waits for the next, and never the last
free one: streams cannot take every slot from unary calls.

The number of slots (``limit``) moves between ``MIN_SLOTS`` and ``size`` (``max_workers``)
from what calls take: each method's fastest recent time is its time without contention, and
a call that took longer than that by more than ``TOLERANCE`` says the server runs more calls
at once than its cores (and the GIL) can serve; the limit then shrinks in proportion, and
grows by one slot at a time while calls take their usual time. On a CPU-bound load a call then
holds its slot about as long as it needs the CPU, not ``max_workers`` times longer, and the
server clears as many calls per second. The slots also keep a moving average of how long a
call holds one: admission uses it to estimate the wait of a new call.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass

# Weight of the newest call in the moving averages.
SMOOTHING = 0.1
# The hold-time average before any call has been measured (a Search takes a few ms).
FIRST_GUESS_S = 0.01
# How often a call waiting for a slot looks at its deadline and its caller.
POLL_S = 0.05
# Calls may take this many times their method's uncontended time before the limit shrinks.
TOLERANCE = 1.5
# Fewest slots the limit shrinks to (at most ``size``).
MIN_SLOTS = 2
# Calls of a method after which its uncontended time is measured afresh.
WINDOW = 256


@dataclass
class Floor:
    """The lowest time of a method's last ``WINDOW`` to ``2 * WINDOW`` calls."""

    current: float = float("inf")
    previous: float = float("inf")
    seen: int = 0

    def observe(self, held_s: float) -> float:
        self.current = min(self.current, held_s)
        self.seen += 1
        if self.seen == WINDOW:
            self.previous, self.current, self.seen = self.current, float("inf"), 0
        return min(self.current, self.previous)


class Workers:
    def __init__(self, size: int) -> None:
        self.size = size
        self.limit = float(size)  # slots usable now: int(limit), at least MIN_SLOTS
        self.working = 0  # slots held now
        self.hold_s = FIRST_GUESS_S  # moving average of a unary call's hold time
        self.stretch = 1.0  # moving average of hold time / the method's uncontended time
        self._floors: dict[str, Floor] = {}
        self._cond = threading.Condition()

    @property
    def slots(self) -> int:
        return min(self.size, max(MIN_SLOTS, int(self.limit)))

    def take(self, wanted: Callable[[], bool], remaining: Callable[[], float | None],
             stream: bool = False) -> bool:
        """Take a slot unless ``wanted()`` turns False first (the caller left or its deadline
        passed; ``remaining()`` is the time to that deadline, None without one). A client
        stream's message (``stream``) leaves one slot free for unary calls."""
        with self._cond:
            while wanted():
                slots = self.slots
                if self.working < (slots - 1 if stream and slots > 1 else slots):
                    self.working += 1
                    return True
                left = remaining()
                self._cond.wait(POLL_S if left is None else min(POLL_S, left))
            self._cond.notify()  # a slot this call was woken for goes to the next one
        return False

    def give(self, held_s: float | None = None, method: str = "") -> None:
        """Give a slot back; ``held_s``: how long a unary call of ``method`` held it (the
        averages and the limit learn from it)."""
        with self._cond:
            self.working -= 1
            if held_s is not None:
                self._learn(held_s, method)
            self._cond.notify()

    def _learn(self, held_s: float, method: str) -> None:
        self.hold_s += SMOOTHING * (held_s - self.hold_s)
        floor = self._floors.setdefault(method, Floor()).observe(held_s)
        self.stretch += SMOOTHING * (held_s / max(floor, 1e-6) - self.stretch)
        if self.stretch > TOLERANCE:
            wanted = self.limit * TOLERANCE / self.stretch
            self.limit = max(float(MIN_SLOTS), self.limit + SMOOTHING * (wanted - self.limit))
        elif self.working + 1 >= self.slots:  # the slots were all in use: try one more
            self.limit = min(float(self.size), self.limit + SMOOTHING)
