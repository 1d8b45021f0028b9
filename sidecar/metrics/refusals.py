"""HTTP requests refused before any page saw them (malformed, too large, too slow, too many):
one WARNING line at most every ``EVERY_S`` seconds, counting the refusals since the last line.

The line names the status and a fixed reason of ours, never the client's bytes.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

log = logging.getLogger(__name__)

EVERY_S = 60.0


class Refusals:
    def __init__(self, every_s: float = EVERY_S,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.every_s = every_s
        self.clock = clock
        self._lock = threading.Lock()
        self._last: float | None = None
        self._count = 0  # refusals since the last line written
        self.total = 0

    def refused(self, status: int, reason: str) -> None:
        with self._lock:
            self.total += 1
            self._count += 1
            now = self.clock()
            if self._last is not None and now - self._last < self.every_s:
                return
            self._last, count, self._count = now, self._count, 0
        log.warning("http requests refused: %d since the previous such line, the last %d %s",
                    count, status, reason,
                    extra={"refused": count, "status": status, "reason": reason})
