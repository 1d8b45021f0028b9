"""Cold scopes loaded ahead of the call that reads them.

A call's scopes are known from its request (agent_id, user_id) before its query is embedded,
so their loads can start first and run beside the embedding (the model releases the GIL)
instead of before or after it. ``start`` hands each cold scope to a loader thread and
returns at once; the call's own ``ResidentScopes.using`` then finds the scope held, or
waits for the load in progress (the loads of one scope are one), or, when no loader thread
took it yet, loads it itself: a prefetch never makes a call wait longer than loading on its
own thread would, and a load that fails here is tried again, and reported, by the call.
A prefetch evicts nothing (the call does, after it read).
"""

from __future__ import annotations

import logging
from collections.abc import Collection
from concurrent.futures import ThreadPoolExecutor

from sidecar.retrieval.resident.keys import ScopeKey, label
from sidecar.retrieval.resident.lru import ResidentScopes

log = logging.getLogger(__name__)

LOADERS = 2  # threads loading scopes ahead of their calls (loads wait for the disk)


class Prefetch:
    def __init__(self, resident: ResidentScopes, workers: int = LOADERS) -> None:
        self._resident = resident
        self._pool = ThreadPoolExecutor(workers, "scope-load")
        self._closed = False

    def start(self, keys: Collection[ScopeKey]) -> int:
        """Start the loads of ``keys``' cold scopes on the loader threads; how many."""
        cold = self._resident.cold(keys)
        if self._closed:
            return 0
        for key in cold:
            try:
                self._pool.submit(self._load, key)
            except RuntimeError:  # closed meanwhile: the call loads what it needs itself
                return 0
        return len(cold)

    def _load(self, key: ScopeKey) -> None:
        try:
            self._resident.load(key)
        except Exception as exc:  # noqa: BLE001 - the call loads it again and reports
            log.debug("scope prefetch failed", extra={"scope": label(key),
                                                      "error": type(exc).__name__})

    def close(self) -> None:
        self._closed = True
        self._pool.shutdown(wait=False, cancel_futures=True)
