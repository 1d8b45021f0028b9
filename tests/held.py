"""The real embedder, with a call a test can hold at the exact point where a server call embeds.

``HeldEmbedder(embedder, "embed")`` behaves as ``embedder`` until ``hold()`` arms it; the next
call of the named method then marks ``entered`` and waits until the server call making it is
no longer wanted (``sidecar.deadline``: its deadline passed or its caller left) before it
embeds. The call then goes on to its commit point knowing it expired, however long the machine
took to get there: no wall-clock margin decides what the test sees.
"""

from __future__ import annotations

import threading
from typing import Any

from sidecar import deadline
from sidecar.embedding import Embedder

POLL_S = 0.005  # how often a held call looks whether its caller is gone


class HeldEmbedder:
    def __init__(self, inner: Embedder, method: str) -> None:
        self._inner = inner
        self._method = method
        self._armed = False
        self._lock = threading.Lock()
        self.entered = threading.Event()  # a held call reached the method

    def hold(self) -> None:
        """Hold the next call of the method (one call)."""
        with self._lock:
            self._armed = True
            self.entered.clear()

    def __getattr__(self, name: str) -> Any:
        found = getattr(self._inner, name)
        if name != self._method:
            return found

        def held(*args: Any, **kwargs: Any) -> Any:
            with self._lock:
                armed, self._armed = self._armed, False
            if armed:
                self.entered.set()
                while deadline.alive():
                    threading.Event().wait(POLL_S)
            return found(*args, **kwargs)

        return held
