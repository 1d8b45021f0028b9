"""The vault's suggestions for the admin page, computed at most once per ``TTL_S`` per scope.

Both scans compare every pair of a scope's vectors: seconds of CPU for a scope of thousands.
The page shows when its lists were computed and offers a recompute; an accept or a dismiss
from the page drops the scope's lists so the next view is fresh. The lists of at most
``SCOPES_HELD`` scopes are kept, so views of many scopes cannot grow the cache.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass

from sidecar.vault import Vault
from sidecar.vault.hygiene import DeletionCandidate, SimilarPair

TTL_S = 300.0
PAIRS = 50
SCOPES_HELD = 16  # the least recently computed scope's lists go first


@dataclass(frozen=True, slots=True)
class Suggestions:
    pairs: list[SimilarPair]
    proposals: list[DeletionCandidate]
    computed: float  # time.monotonic() when computed


class SuggestionCache:
    def __init__(self, vault: Vault) -> None:
        self.vault = vault
        self._lock = threading.Lock()  # one scan at a time
        self._held: dict[str, Suggestions] = {}

    def get(self, scope: str, fresh: bool = False) -> Suggestions:
        with self._lock:
            held = self._held.get(scope)
            if fresh or held is None or time.monotonic() - held.computed > TTL_S:
                held = Suggestions(self.vault.consolidation_candidates(scope, None, PAIRS),
                                   self.vault.propose_deletions(scope), time.monotonic())
                self._held.pop(scope, None)
                self._held[scope] = held  # most recently computed last
                while len(self._held) > SCOPES_HELD:
                    del self._held[next(iter(self._held))]
            return held

    def drop(self, scope: str) -> None:
        with self._lock:
            self._held.pop(scope, None)
