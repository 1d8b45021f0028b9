"""Worker slots: how many calls the server works for at once, adapted to measured latency.

A unary call holds a slot from its start to its end; a client stream holds one only while the
server works on a message it received, never while it waits for the next, and never the last
free one: streams cannot take every slot from unary calls. Slots go to waiting calls in the
order they asked (a slot given back is handed to the first waiter that may take it; a new call
never takes one ahead of the calls already waiting), so a call's wait is the work ahead of it,
which is what admission estimates.

The number of slots (``limit``) starts at ``MIN_SLOTS`` and moves between it and ``size``
(``max_workers``) from what calls take: each method's fastest recent time is its time without
contention, and a call that took longer than that by more than ``TOLERANCE`` says the server
runs more calls at once than its cores (and the GIL) can serve; the limit then shrinks in
proportion, and grows by one slot at a time while calls take their usual time with every slot
in use. On a CPU-bound load a call then holds its slot about as long as it needs the CPU, not
``max_workers`` times longer, and the server clears as many calls per second. The slots also
keep a moving average of how long a call holds one: admission uses it to estimate the wait of
a new call.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

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


@dataclass(eq=False)
class Ticket:
    """A call waiting for a slot; ``granted`` once a slot is handed to it."""

    wake: threading.Condition
    stream: bool
    granted: bool = field(default=False)


class Workers:
    def __init__(self, size: int) -> None:
        self.size = size
        self.limit = float(MIN_SLOTS)  # slots usable now: int(limit), at least MIN_SLOTS
        self.working = 0  # slots held now
        self.hold_s = FIRST_GUESS_S  # moving average of a unary call's hold time
        self.stretch = 1.0  # moving average of hold time / the method's uncontended time
        self._floors: dict[str, Floor] = {}
        self._lock = threading.Lock()
        self._waiting: deque[Ticket] = deque()

    @property
    def slots(self) -> int:
        return min(self.size, max(MIN_SLOTS, int(self.limit)))

    def take(self, wanted: Callable[[], bool], remaining: Callable[[], float | None],
             stream: bool = False) -> bool:
        """Take a slot, in turn, unless ``wanted()`` turns False first (the caller left or its
        deadline passed; ``remaining()`` is the time to that deadline, None without one). A
        client stream's message (``stream``) leaves one slot free for unary calls."""
        if not wanted():
            return False
        with self._lock:
            ticket = Ticket(threading.Condition(self._lock), stream)
            self._waiting.append(ticket)
            self._hand_out()
            while not ticket.granted:
                if not wanted():
                    self._waiting.remove(ticket)
                    return False
                left = remaining()
                ticket.wake.wait(POLL_S if left is None else min(POLL_S, left))
        return True

    def give(self, held_s: float | None = None, method: str = "", stream: bool = False
             ) -> None:
        """Give a slot back; ``held_s``: how long a unary call of ``method`` held it (the
        averages and the limit learn from it). A client stream's message (``stream``) that
        leaves calls waiting while unary calls keep their usual time adds a slot: several
        imports at once are not held to one message at a time (a message can take seconds,
        so the limit grows by whole slots; unary calls shrink it when they slow down)."""
        with self._lock:
            self.working -= 1
            if held_s is not None:
                self._learn(held_s, method)
            elif stream and self._waiting and self.stretch <= TOLERANCE:
                self.limit = min(float(self.size), self.limit + 1)
            self._hand_out()

    def _hand_out(self) -> None:
        """Free slots go to the waiting calls in order (a stream message passes its turn when
        only the slot kept for unary calls is free)."""
        slots = self.slots
        index = 0
        while index < len(self._waiting) and self.working < slots:
            ticket = self._waiting[index]
            if ticket.stream and slots > 1 and self.working >= slots - 1:
                index += 1
                continue
            del self._waiting[index]
            ticket.granted = True
            self.working += 1
            ticket.wake.notify()

    def _learn(self, held_s: float, method: str) -> None:
        self.hold_s += SMOOTHING * (held_s - self.hold_s)
        floor = self._floors.setdefault(method, Floor()).observe(held_s)
        self.stretch += SMOOTHING * (held_s / max(floor, 1e-6) - self.stretch)
        if self.stretch > TOLERANCE:
            wanted = self.limit * TOLERANCE / self.stretch
            self.limit = max(float(MIN_SLOTS), self.limit + SMOOTHING * (wanted - self.limit))
        elif self.working + 1 >= self.slots:  # the slots were all in use: try one more
            self.limit = min(float(self.size), self.limit + SMOOTHING)
