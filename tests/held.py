"""The real embedder, with the calls of one method held at the exact point where a server call
embeds.

Every call of ``method`` made through a ``HeldEmbedder`` counts itself in ``entered``, then
waits until the server call making it is no longer wanted (``sidecar.deadline``: its deadline
passed or its caller left) before it embeds. The call then goes on to its commit point knowing
it expired, however long the machine took to get there: no wall-clock margin decides what the
test sees. Outside a server call nothing is ever "no longer wanted": only server calls may use
the held method (the server's own warm-up uses the others).
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
        self._lock = threading.Lock()
        self.entered = 0  # held calls that reached the method

    def __getattr__(self, name: str) -> Any:
        found = getattr(self._inner, name)
        if name != self._method:
            return found

        def held(*args: Any, **kwargs: Any) -> Any:
            with self._lock:
                self.entered += 1
            while deadline.alive():
                threading.Event().wait(POLL_S)
            return found(*args, **kwargs)

        return held
