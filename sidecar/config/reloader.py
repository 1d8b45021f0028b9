"""A daemon thread that polls the config file and asks the store to reload it.

Latency: new content is applied once two polls in a row read the same bytes (so a file caught
half-written is never applied): at most two poll intervals plus the parse.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

log = logging.getLogger(__name__)

POLL_INTERVAL_S = 0.5


class Reloader:
    def __init__(self, poll: Callable[[], bool], interval: float = POLL_INTERVAL_S) -> None:
        self._poll = poll
        self.interval = interval
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="config-reloader", daemon=True)

    def start(self) -> None:
        self._thread.start()
        log.info("watching config file", extra={"interval_s": self.interval})

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=5)

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                self._poll()
            except Exception:  # never let the watcher die; the last good config keeps serving
                log.exception("config reload failed")
