"""Writes that wait for a shared store away, tried again in the background until written.

``CatchUp`` runs ``attempt`` on a daemon thread of its own (started by the first ``wake``)
when woken and then every ``RETRY_S`` seconds, until ``attempt`` answers that nothing is left
to write; then it sleeps until the next ``wake``. So what waits is written once the store is
back even when no call comes to trigger it. ``attempt`` raises nothing it expects (a store
still away is its False); anything else is logged and tried again.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

log = logging.getLogger(__name__)

RETRY_S = 1.0


class CatchUp:
    def __init__(self, attempt: Callable[[], bool], name: str,
                 every_s: float = RETRY_S) -> None:
        self._attempt = attempt
        self._name = name
        self._every_s = every_s
        self._wanted = threading.Event()
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    def wake(self) -> None:
        """Something waits: try (again) now, and each ``every_s`` until it is written."""
        with self._lock:
            if self._stop.is_set():
                return
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name=self._name,
                                                daemon=True)
                self._thread.start()
        self._wanted.set()

    def close(self) -> None:
        """Stop the thread (after its attempt in flight). Idempotent."""
        with self._lock:
            self._stop.set()
            thread = self._thread
        self._wanted.set()
        if thread is not None:
            thread.join()

    def _run(self) -> None:
        while True:
            self._wanted.wait()
            while not self._stop.is_set():
                self._wanted.clear()
                if self._tried():
                    break
                self._stop.wait(self._every_s)
            if self._stop.is_set():
                return

    def _tried(self) -> bool:
        try:
            return self._attempt()
        except Exception:
            log.exception("a catch-up of writes waiting for the store failed; tried again",
                          extra={"worker": self._name})
            return False
