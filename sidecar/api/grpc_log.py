"""Requests that are not valid protobuf, counted in one log line and rarely.

The server reads such a request itself (``sidecar.api.malformed``: INVALID_ARGUMENT) and
notes it here; grpc would otherwise log each with a full traceback (logger ``grpc._common``,
"Exception deserializing message!"), so the filter on that logger stays for any message grpc
still fails to read. Both become one WARNING line without a traceback, at most one per
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
LINE = "malformed requests: %d not valid protobuf (%s) since the previous such line"

log = logging.getLogger(__name__)


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
        count = self._tally()
        if count is None:
            return False
        record.msg, record.args = LINE, (count, type(failed).__name__ if failed else "unknown")
        record.levelno, record.levelname = logging.WARNING, "WARNING"
        record.exc_info, record.exc_text, record.stack_info = None, None, None
        return True

    def note(self, failed: BaseException) -> None:
        """One more malformed request, read by the server itself."""
        count = self._tally()
        if count is not None:
            log.warning(LINE, count, type(failed).__name__)

    def _tally(self) -> int | None:
        """Counts one request; the requests to report when a line is due, else None."""
        with self._lock:
            self._count += 1
            now = self.clock()
            if self._last is not None and now - self._last < self.every_s:
                return None
            self._last, count, self._count = now, self._count, 0
        return count


MALFORMED = MalformedRequests()


def install() -> None:
    """Filter grpc's deserialization errors (idempotent)."""
    logger = logging.getLogger(GRPC_LOGGER)
    if MALFORMED not in logger.filters:
        logger.addFilter(MALFORMED)
