"""grpc's own log lines about requests that are not valid protobuf, made one line and rare.

grpc logs every request it cannot deserialize with a full traceback (logger ``grpc._common``,
"Exception deserializing message!"), so a flood of malformed requests floods the log. The
filter turns each such record into one WARNING line without the traceback, at most one per
``EVERY_S`` seconds, counting the requests since the previous line.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

GRPC_LOGGER = "grpc._common"
DESERIALIZE_FAILED = "Exception deserializing message!"
EVERY_S = 60.0


class MalformedRequests(logging.Filter):
    def __init__(self, every_s: float = EVERY_S,
                 clock: Callable[[], float] = time.monotonic) -> None:
        super().__init__()
        self.every_s = every_s
        self.clock = clock
        self._lock = threading.Lock()
        self._last: float | None = None
        self._count = 0  # malformed requests since the last line written

    def filter(self, record: logging.LogRecord) -> bool:
        if record.msg != DESERIALIZE_FAILED:
            return True
        failed = record.exc_info[1] if record.exc_info else None
        with self._lock:
            self._count += 1
            now = self.clock()
            if self._last is not None and now - self._last < self.every_s:
                return False
            self._last, count, self._count = now, self._count, 0
        record.msg = "malformed requests: %d not valid protobuf (%s) since the previous such line"
        record.args = (count, type(failed).__name__ if failed else "unknown")
        record.levelno, record.levelname = logging.WARNING, "WARNING"
        record.exc_info, record.exc_text, record.stack_info = None, None, None
        return True


MALFORMED = MalformedRequests()


def install() -> None:
    """Filter grpc's deserialization errors (idempotent)."""
    logger = logging.getLogger(GRPC_LOGGER)
    if MALFORMED not in logger.filters:
        logger.addFilter(MALFORMED)
