"""Worker slots: at most ``size`` calls have the server working for them at once.

A unary call holds a slot from its start to its end; a client stream holds one only while the
server works on a message it received, never while it waits for the next. The slots also keep
a moving average of how long a unary call holds one: admission uses it to estimate the wait
of a new call.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

# Weight of the newest call in the moving average of the slot hold time.
SMOOTHING = 0.1
# The average before any call has been measured (a Search on a small store takes a few ms).
FIRST_GUESS_S = 0.01
# How often a call waiting for a slot looks at its deadline and its caller.
POLL_S = 0.05


class Workers:
    def __init__(self, size: int) -> None:
        self.size = size
        self.working = 0  # slots held now
        self.hold_s = FIRST_GUESS_S  # moving average of a unary call's hold time
        self._slots = threading.BoundedSemaphore(size)
        self._lock = threading.Lock()

    def take(self, wanted: Callable[[], bool], remaining: Callable[[], float | None]) -> bool:
        """Take a slot unless ``wanted()`` turns False first (the caller left or its deadline
        passed; ``remaining()`` is the time to that deadline, None without one)."""
        while wanted():
            left = remaining()
            if self._slots.acquire(timeout=POLL_S if left is None else min(POLL_S, left)):
                if wanted():
                    with self._lock:
                        self.working += 1
                    return True
                self._slots.release()
                return False
        return False

    def give(self, held_s: float | None = None) -> None:
        """Give a slot back; ``held_s``: how long a unary call held it (the average learns)."""
        with self._lock:
            self.working -= 1
            if held_s is not None:
                self.hold_s += SMOOTHING * (held_s - self.hold_s)
        self._slots.release()
